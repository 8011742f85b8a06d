// ns-3 reference scenario for the mpsim side-by-side benchmark.
//
// Dumbbell topology, point-to-point links everywhere:
//
//   S0 --\                                         /-- D0
//   S1 ---+-- R1 ====(rate R, 20 ms, Q p)====== R2 --+-- D1
//   ...  -/                                         \-- ...
//
//   access links Si-R1 and R2-Di: 100 Mbit/s, 1 ms, 1000-packet device queues
//   bottleneck R1-R2: --rate bit/s, 20 ms, --queue packets (default 100) of
//   drop-tail device queue, or with --qdisc a CoDel, FQ-CoDel, RED or PIE
//   queue disc of that limit over a 1-packet device queue; --ecn turns on
//   RFC 3168 ECN in every TCP socket and in that queue disc
//
// N TCP NewReno bulk transfers Si -> Di run for --duration seconds. Random
// packet loss (--loss) is applied to packets arriving at R2 over the
// bottleneck (the data direction only; ACKs travel R2 -> R1 loss-free).
//
// The program prints one JSON object on stdout. "wall_s" covers only
// Simulator::Run(); topology construction is excluded.
//
// Build: see ns3_dumbbell.py (compiles against the headers/libraries shipped
// in the `ns3` wheel from PyPI).

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <unordered_map>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#ifndef NS3_WHEEL_VERSION
#define NS3_WHEEL_VERSION "unknown"
#endif

using namespace ns3;

namespace
{

constexpr uint32_t kSegmentSize = 1460;     // TCP payload bytes per full segment
constexpr uint16_t kSinkPort = 5000;
const char* kAccessRate = "100Mbps";
const char* kAccessDelay = "1ms";
const char* kAccessQueue = "1000p";         // large enough never to drop
const char* kBottleneckDelay = "20ms";

// ---- counters filled by trace sinks --------------------------------------

struct Counters
{
    uint64_t bottleneckQueueDrops = 0; // DropTailQueue "Drop" on R1's bottleneck device
    uint64_t bottleneckMacTxDrops = 0; // device refused the packet (queue full)
    uint64_t r1TcDrops = 0;            // traffic-control layer drop on R1 (device queue stopped)
    uint64_t otherDrops = 0;           // any queue / TC drop anywhere else (expected 0)
    uint64_t randomLosses = 0;         // RateErrorModel drops at R2 (PhyRxDrop)
    uint32_t maxBottleneckQueue = 0;   // peak packets waiting in the bottleneck queue
    uint64_t bottleneckTxPackets = 0;  // packets put on the wire R1 -> R2
    uint64_t bottleneckTxBytes = 0;    // bytes on the wire R1 -> R2 (incl. 2-byte PPP header)
    uint32_t bottleneckMaxPacket = 0;  // largest frame R1 -> R2 (PPP + IP + TCP + payload)
};

Counters g_counters;

struct FlowStats
{
    uint64_t retransmissions = 0; // segments retransmitted (BulkSend "TcpRetransmission")
    uint64_t fastRecoveries = 0;  // entries into CA_RECOVERY
    uint64_t cwrEntries = 0;      // entries into CA_CWR (window reductions on ECN-Echo)
    uint64_t timeouts = 0;        // entries into CA_LOSS (RTO expirations)
    double establishedAt = -1.0;  // time the sender reached ESTABLISHED (s)
};

std::vector<FlowStats> g_flowStats;

// Queue-disc measurements (only with --qdisc). Two sojourn times per packet:
// the queue disc's own ("SojournTime": enqueue to leaving the queue disc for
// the device queue) and enqueue to the start of its transmission on the wire
// (PhyTxBegin), which is what mpsim reports. With a 1-packet device queue the
// two differ by at most one transmission time.
struct QdiscStats
{
    std::unordered_map<uint64_t, int64_t> enqueuedAt; // packet uid -> enqueue time (ns)
    std::vector<int64_t> toWire;                      // enqueue -> PhyTxBegin (ns)
    std::vector<int64_t> sojourn;                     // queue disc's SojournTime (ns)
    uint32_t maxPackets = 0;                          // peak packets in the queue disc
};

QdiscStats g_qdisc;

void
OnQdiscEnqueue(Ptr<const QueueDiscItem> item)
{
    g_qdisc.enqueuedAt[item->GetPacket()->GetUid()] = Simulator::Now().GetNanoSeconds();
}

void
OnQdiscDrop(Ptr<const QueueDiscItem> item)
{
    g_qdisc.enqueuedAt.erase(item->GetPacket()->GetUid());
}

void
OnQdiscSojourn(Time t)
{
    g_qdisc.sojourn.push_back(t.GetNanoSeconds());
}

void
OnQdiscPackets(uint32_t, uint32_t now)
{
    g_qdisc.maxPackets = std::max(g_qdisc.maxPackets, now);
}

// Mean and 95th percentile (nearest rank) in milliseconds.
std::pair<double, double>
MeanP95Ms(std::vector<int64_t> v)
{
    if (v.empty())
    {
        return {0.0, 0.0};
    }
    double sum = 0;
    for (int64_t x : v)
    {
        sum += x;
    }
    size_t rank = (v.size() * 95 + 99) / 100; // ceil(0.95 n), 1-based
    std::nth_element(v.begin(), v.begin() + (rank - 1), v.end());
    return {sum / v.size() / 1e6, v[rank - 1] / 1e6};
}

void
OnBottleneckQueueDrop(Ptr<const Packet>)
{
    ++g_counters.bottleneckQueueDrops;
}

void
OnBottleneckMacTxDrop(Ptr<const Packet>)
{
    ++g_counters.bottleneckMacTxDrops;
}

void
OnR1TcDrop(Ptr<const Packet>)
{
    ++g_counters.r1TcDrops;
}

void
OnOtherDrop(Ptr<const Packet>)
{
    ++g_counters.otherDrops;
}

void
OnRandomLoss(Ptr<const Packet>)
{
    ++g_counters.randomLosses;
}

void
OnBottleneckQueueLen(uint32_t /* oldValue */, uint32_t newValue)
{
    if (newValue > g_counters.maxBottleneckQueue)
    {
        g_counters.maxBottleneckQueue = newValue;
    }
}

void
OnBottleneckPhyTxBegin(Ptr<const Packet> p)
{
    auto it = g_qdisc.enqueuedAt.find(p->GetUid());
    if (it != g_qdisc.enqueuedAt.end())
    {
        g_qdisc.toWire.push_back(Simulator::Now().GetNanoSeconds() - it->second);
        g_qdisc.enqueuedAt.erase(it);
    }
    ++g_counters.bottleneckTxPackets;
    g_counters.bottleneckTxBytes += p->GetSize();
    if (p->GetSize() > g_counters.bottleneckMaxPacket)
    {
        g_counters.bottleneckMaxPacket = p->GetSize();
    }
}

void
OnRetransmission(uint32_t flow,
                 Ptr<const Packet>,
                 const TcpHeader&,
                 const Address&,
                 const Address&,
                 Ptr<const TcpSocketBase>)
{
    ++g_flowStats[flow].retransmissions;
}

void
OnCongState(uint32_t flow, TcpSocketState::TcpCongState_t, TcpSocketState::TcpCongState_t now)
{
    if (now == TcpSocketState::CA_RECOVERY)
    {
        ++g_flowStats[flow].fastRecoveries;
    }
    else if (now == TcpSocketState::CA_LOSS)
    {
        ++g_flowStats[flow].timeouts;
    }
    else if (now == TcpSocketState::CA_CWR)
    {
        ++g_flowStats[flow].cwrEntries;
    }
}

void
OnTcpState(uint32_t flow, TcpSocket::TcpStates_t, TcpSocket::TcpStates_t now)
{
    if (now == TcpSocket::ESTABLISHED && g_flowStats[flow].establishedAt < 0)
    {
        // A lost SYN shows up here as a ConnTimeout (3 s) late start.
        g_flowStats[flow].establishedAt = Simulator::Now().GetSeconds();
    }
}

// The sender's socket only exists once BulkSendApplication has started, so
// the state traces are hooked up shortly after the start time (the SYN has
// been sent, the handshake is still in progress).
void
HookCongState(Ptr<BulkSendApplication> app, uint32_t flow)
{
    Ptr<Socket> sock = app->GetSocket();
    NS_ABORT_MSG_IF(!sock, "BulkSendApplication has no socket yet");
    sock->TraceConnectWithoutContext("CongState", MakeBoundCallback(&OnCongState, flow));
    sock->TraceConnectWithoutContext("State", MakeBoundCallback(&OnTcpState, flow));
}

// Remove the root queue disc that Ipv4AddressHelper::Assign installs by
// default (FqCoDel, 1000 packets in ns-3.44) from every device of every node.
// After this, IP hands packets straight to the device and the device's
// DropTailQueue is the only buffer on the path.
void
RemoveAllQueueDiscs(const NodeContainer& nodes)
{
    TrafficControlHelper tch;
    for (uint32_t n = 0; n < nodes.GetN(); ++n)
    {
        Ptr<Node> node = nodes.Get(n);
        Ptr<TrafficControlLayer> tc = node->GetObject<TrafficControlLayer>();
        for (uint32_t d = 0; d < node->GetNDevices(); ++d)
        {
            Ptr<NetDevice> dev = node->GetDevice(d);
            if (tc && tc->GetRootQueueDiscOnDevice(dev))
            {
                tch.Uninstall(dev);
            }
            // Verification: no queue disc may remain anywhere.
            NS_ABORT_MSG_IF(tc && tc->GetRootQueueDiscOnDevice(dev),
                            "queue disc still installed on node " << n << " device " << d);
        }
    }
}

Ptr<Queue<Packet>>
DeviceQueue(Ptr<NetDevice> dev)
{
    return DynamicCast<PointToPointNetDevice>(dev)->GetQueue();
}

// Install the queue disc named by --qdisc as the root queue disc of R1's
// bottleneck device, with parameters matching mpsim's defaults
// (docs/aqm.md). Its limit is --queue packets, as mpsim's link `queue`.
Ptr<QueueDisc>
InstallBottleneckQdisc(Ptr<NetDevice> dev,
                       const std::string& kind,
                       uint32_t limit,
                       uint64_t rate,
                       bool derandomize,
                       bool ecn)
{
    TrafficControlHelper tch;
    StringValue maxSize(std::to_string(limit) + "p");
    if (kind == "codel")
    {
        tch.SetRootQueueDisc("ns3::CoDelQueueDisc",
                             "MaxSize", maxSize,
                             "Target", StringValue("5ms"),
                             "Interval", StringValue("100ms"),
                             "MinBytes", UintegerValue(1500),
                             "UseEcn", BooleanValue(ecn));
    }
    else if (kind == "fq_codel")
    {
        tch.SetRootQueueDisc("ns3::FqCoDelQueueDisc",
                             "MaxSize", maxSize,
                             "Target", StringValue("5ms"),
                             "Interval", StringValue("100ms"),
                             "Flows", UintegerValue(1024),
                             "DropBatchSize", UintegerValue(64),
                             "UseEcn", BooleanValue(ecn));
    }
    else if (kind == "red")
    {
        tch.SetRootQueueDisc("ns3::RedQueueDisc",
                             "MaxSize", maxSize,
                             "MinTh", DoubleValue(5),
                             "MaxTh", DoubleValue(15),
                             "LInterm", DoubleValue(50),
                             "QW", DoubleValue(0.002),
                             "Gentle", BooleanValue(true),
                             "MeanPktSize", UintegerValue(1500),
                             // idle-time decay: packets of MeanPktSize at the link's rate
                             "LinkBandwidth", DataRateValue(DataRate(rate)),
                             "LinkDelay", StringValue("20ms"),
                             // With ECN, an ECN-capable packet above the forced-drop
                             // threshold is marked, not dropped, as Linux's RED without
                             // harddrop; without ECN this changes nothing
                             "UseHardDrop", BooleanValue(!ecn),
                             "UseEcn", BooleanValue(ecn));
    }
    else if (kind == "pie")
    {
        tch.SetRootQueueDisc("ns3::PieQueueDisc",
                             "MaxSize", maxSize,
                             "QueueDelayReference", StringValue("15ms"),
                             "Tupdate", StringValue("15ms"),
                             "A", DoubleValue(0.125),
                             "B", DoubleValue(1.25),
                             "MaxBurstAllowance", StringValue("150ms"),
                             "MeanPktSize", UintegerValue(1500),
                             "UseDequeueRateEstimator", BooleanValue(false),
                             "UseDerandomization", BooleanValue(derandomize),
                             // marks while the drop probability is at most 10 %, as Linux
                             "MarkEcnThreshold", DoubleValue(0.1),
                             "UseEcn", BooleanValue(ecn));
    }
    else
    {
        NS_ABORT_MSG("--qdisc must be none, codel, fq_codel, red or pie, not " << kind);
    }
    Ptr<QueueDisc> qd = tch.Install(dev).Get(0);
    if (kind == "fq_codel")
    {
        // Not an attribute; left at 0, ns-3 takes the device MTU (1600 here).
        DynamicCast<FqCoDelQueueDisc>(qd)->SetQuantum(1514);
    }
    return qd;
}

} // namespace

int
main(int argc, char* argv[])
{
    uint32_t nFlows = 2;
    uint64_t bottleneckRate = 10000000; // bit/s
    double loss = 0.0;
    double duration = 60.0; // seconds
    uint32_t seed = 1;
    double minRto = 0.2;    // seconds
    double staggerMs = 0.0; // flow i starts at i * staggerMs milliseconds
    std::string qdisc = "none";
    uint32_t queue = 100;     // bottleneck buffer, packets
    bool derandomize = true;  // PIE only
    bool ecn = false;         // RFC 3168 ECN in TCP and the queue disc

    CommandLine cmd(__FILE__);
    cmd.AddValue("flows", "number of TCP flows / sender-receiver pairs", nFlows);
    cmd.AddValue("rate", "bottleneck rate in bit/s", bottleneckRate);
    cmd.AddValue("loss", "random packet loss rate on the bottleneck (data direction)", loss);
    cmd.AddValue("duration", "simulated seconds", duration);
    cmd.AddValue("seed", "RNG seed (sets both RngSeed and RngRun)", seed);
    cmd.AddValue("minRto", "TCP minimum RTO in seconds", minRto);
    cmd.AddValue("staggerMs", "start offset between consecutive flows, ms", staggerMs);
    cmd.AddValue("qdisc",
                 "bottleneck queue disc: none (drop-tail device queue), codel, fq_codel, red, pie",
                 qdisc);
    cmd.AddValue("queue", "bottleneck buffer in packets (device queue, or the queue disc's limit)", queue);
    cmd.AddValue("derandomize", "PIE: de-randomised drops (UseDerandomization)", derandomize);
    cmd.AddValue("ecn", "ECN: TcpSocketBase::UseEcn On and the queue disc's UseEcn", ecn);
    cmd.Parse(argc, argv);

    NS_ABORT_MSG_IF(nFlows < 1 || nFlows > 250, "--flows must be in 1..250");
    NS_ABORT_MSG_IF(seed < 1, "--seed must be >= 1");
    NS_ABORT_MSG_IF(loss < 0.0 || loss >= 1.0, "--loss must be in [0, 1)");
    NS_ABORT_MSG_IF(duration <= 0.0, "--duration must be positive");
    NS_ABORT_MSG_IF(queue < 1, "--queue must be at least 1 packet");
    const bool withQdisc = qdisc != "none";

    RngSeedManager::SetSeed(seed);
    RngSeedManager::SetRun(seed);

    // ---- TCP configuration (must be set before the stacks are installed) ----

    // Congestion control: NewReno. Loss recovery: ns-3.44 defaults to PRR
    // (TcpPrrRecovery); switch to classic fast recovery (cwnd = ssthresh on
    // entry, SACK-based RFC 6675-style retransmission while in recovery).
    Config::SetDefault("ns3::TcpL4Protocol::SocketType", StringValue("ns3::TcpNewReno"));
    Config::SetDefault("ns3::TcpL4Protocol::RecoveryType",
                       TypeIdValue(TcpClassicRecovery::GetTypeId()));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(kSegmentSize));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(10));
    // ACK every segment (no delayed ACKs).
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(1));
    // 4 MB buffers: with window scaling (on by default) the advertised
    // receive window never limits the sender.
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(4 << 20));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(4 << 20));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(Seconds(minRto)));
    Config::SetDefault("ns3::TcpSocketBase::ClockGranularity", TimeValue(MilliSeconds(1)));
    // ECN (RFC 3168): both ends ask for it, so every connection negotiates it.
    Config::SetDefault("ns3::TcpSocketBase::UseEcn", StringValue(ecn ? "On" : "Off"));
    // Left at their ns-3.44 defaults (stated here for the record):
    //   TcpSocketBase::Timestamp      = true  (TSopt on every segment: 10 bytes,
    //                                          padded to 12 -> 32-byte TCP header)
    //   TcpSocketBase::WindowScaling  = true
    //   TcpSocketBase::LimitedTransmit= true, ReTxThreshold = 3 dupACKs
    //   TcpSocket::TcpNoDelay         = true  (Nagle off)
    //   TcpL4Protocol::RttEstimatorType = ns3::RttMeanDeviation (RFC 6298)

    // With timestamps on, a full segment is 20 (IP) + 32 (TCP) + 1460 = 1512
    // bytes, which exceeds the default 1500-byte point-to-point MTU and would
    // be IP-fragmented. Raise the device MTU so segments travel unfragmented.
    Config::SetDefault("ns3::PointToPointNetDevice::Mtu", UintegerValue(1600));

    // ---- topology -----------------------------------------------------------

    NodeContainer senders;
    NodeContainer receivers;
    NodeContainer routers;
    senders.Create(nFlows);
    receivers.Create(nFlows);
    routers.Create(2);
    Ptr<Node> r1 = routers.Get(0);
    Ptr<Node> r2 = routers.Get(1);

    PointToPointHelper access;
    access.SetDeviceAttribute("DataRate", StringValue(kAccessRate));
    access.SetChannelAttribute("Delay", StringValue(kAccessDelay));
    access.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", StringValue(kAccessQueue));

    PointToPointHelper bottleneck;
    bottleneck.SetDeviceAttribute("DataRate", DataRateValue(DataRate(bottleneckRate)));
    bottleneck.SetChannelAttribute("Delay", StringValue(kBottleneckDelay));
    bottleneck.SetQueue("ns3::DropTailQueue<Packet>",
                        "MaxSize",
                        StringValue(std::to_string(queue) + "p"));

    NetDeviceContainer bnDevs = bottleneck.Install(r1, r2); // [0] on R1, [1] on R2
    std::vector<NetDeviceContainer> leftDevs(nFlows);
    std::vector<NetDeviceContainer> rightDevs(nFlows);
    for (uint32_t i = 0; i < nFlows; ++i)
    {
        leftDevs[i] = access.Install(senders.Get(i), r1);
        rightDevs[i] = access.Install(r2, receivers.Get(i));
    }

    NodeContainer all(senders, receivers, routers);
    InternetStackHelper stack;
    stack.Install(all);

    Ipv4AddressHelper addr;
    addr.SetBase("10.0.0.0", "255.255.255.0");
    addr.Assign(bnDevs);
    std::vector<Ipv4InterfaceContainer> rightIfs(nFlows);
    for (uint32_t i = 0; i < nFlows; ++i)
    {
        std::ostringstream left;
        std::ostringstream right;
        left << "10.1." << (i + 1) << ".0";
        right << "10.2." << (i + 1) << ".0";
        addr.SetBase(left.str().c_str(), "255.255.255.0");
        addr.Assign(leftDevs[i]);
        addr.SetBase(right.str().c_str(), "255.255.255.0");
        rightIfs[i] = addr.Assign(rightDevs[i]);
    }
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    // Ipv4AddressHelper::Assign has just installed the default queue disc on
    // every device; remove them all (and verify) so that the device queues
    // configured above are the only buffers.
    RemoveAllQueueDiscs(all);

    // With --qdisc the queue disc on R1's bottleneck device holds the queue.
    // The device queue below it holds one packet: the one waiting for the
    // transmission in progress to end (flow control stops the queue disc
    // while it is full), so the device hides no queue from the discipline.
    Ptr<QueueDisc> bnQdisc;
    if (withQdisc)
    {
        DeviceQueue(bnDevs.Get(0))->SetMaxSize(QueueSize("1p"));
        bnQdisc = InstallBottleneckQdisc(bnDevs.Get(0), qdisc, queue, bottleneckRate, derandomize, ecn);
        bnQdisc->TraceConnectWithoutContext("Enqueue", MakeCallback(&OnQdiscEnqueue));
        bnQdisc->TraceConnectWithoutContext("Drop", MakeCallback(&OnQdiscDrop));
        bnQdisc->TraceConnectWithoutContext("SojournTime", MakeCallback(&OnQdiscSojourn));
        bnQdisc->TraceConnectWithoutContext("PacketsInQueue", MakeCallback(&OnQdiscPackets));
    }

    // ---- random loss on the bottleneck, data direction only ----------------

    Ptr<RateErrorModel> em = CreateObject<RateErrorModel>();
    em->SetAttribute("ErrorUnit", EnumValue(RateErrorModel::ERROR_UNIT_PACKET));
    em->SetAttribute("ErrorRate", DoubleValue(loss));
    em->AssignStreams(1000); // fixed stream -> deterministic for a given seed
    bnDevs.Get(1)->SetAttribute("ReceiveErrorModel", PointerValue(em));

    // ---- drop / queue instrumentation ---------------------------------------
    //
    // Without a queue disc, TrafficControlLayer::Send still honours device
    // flow control: once the 100-packet device queue is full the device stops
    // its transmit queue and the TC layer discards the packet ("TcDrop"),
    // i.e. the packet is tail-dropped because the device queue is full. The
    // DropTailQueue "Drop" and device "MacTxDrop" traces catch the same event
    // if flow control is ever bypassed. No other buffer exists on R1.

    Ptr<Queue<Packet>> bnQueue = DeviceQueue(bnDevs.Get(0));
    bnQueue->TraceConnectWithoutContext("Drop", MakeCallback(&OnBottleneckQueueDrop));
    bnQueue->TraceConnectWithoutContext("PacketsInQueue", MakeCallback(&OnBottleneckQueueLen));
    bnDevs.Get(0)->TraceConnectWithoutContext("MacTxDrop", MakeCallback(&OnBottleneckMacTxDrop));
    bnDevs.Get(0)->TraceConnectWithoutContext("PhyTxBegin", MakeCallback(&OnBottleneckPhyTxBegin));
    bnDevs.Get(1)->TraceConnectWithoutContext("PhyRxDrop", MakeCallback(&OnRandomLoss));
    r1->GetObject<TrafficControlLayer>()->TraceConnectWithoutContext("TcDrop",
                                                                     MakeCallback(&OnR1TcDrop));
    for (uint32_t n = 0; n < all.GetN(); ++n)
    {
        Ptr<Node> node = all.Get(n);
        if (node != r1)
        {
            node->GetObject<TrafficControlLayer>()->TraceConnectWithoutContext(
                "TcDrop",
                MakeCallback(&OnOtherDrop));
        }
        for (uint32_t d = 0; d < node->GetNDevices(); ++d)
        {
            Ptr<NetDevice> dev = node->GetDevice(d);
            if (dev == bnDevs.Get(0) || !DynamicCast<PointToPointNetDevice>(dev))
            {
                continue;
            }
            DeviceQueue(dev)->TraceConnectWithoutContext("Drop", MakeCallback(&OnOtherDrop));
        }
    }

    // ---- applications ------------------------------------------------------

    g_flowStats.assign(nFlows, FlowStats{});
    std::vector<Ptr<PacketSink>> sinks(nFlows);
    for (uint32_t i = 0; i < nFlows; ++i)
    {
        Address sinkAddr(InetSocketAddress(rightIfs[i].GetAddress(1), kSinkPort));

        PacketSinkHelper sinkHelper("ns3::TcpSocketFactory",
                                    InetSocketAddress(Ipv4Address::GetAny(), kSinkPort));
        ApplicationContainer sinkApp = sinkHelper.Install(receivers.Get(i));
        sinkApp.Start(Seconds(0.0));
        sinkApp.Stop(Seconds(duration));
        sinks[i] = DynamicCast<PacketSink>(sinkApp.Get(0));

        BulkSendHelper src("ns3::TcpSocketFactory", sinkAddr);
        src.SetAttribute("MaxBytes", UintegerValue(0)); // unlimited
        src.SetAttribute("SendSize", UintegerValue(kSegmentSize));
        ApplicationContainer srcApp = src.Install(senders.Get(i));
        Time start = MilliSeconds(staggerMs * i);
        srcApp.Start(start);
        srcApp.Stop(Seconds(duration));

        Ptr<BulkSendApplication> bulk = DynamicCast<BulkSendApplication>(srcApp.Get(0));
        bulk->TraceConnectWithoutContext("TcpRetransmission",
                                         MakeBoundCallback(&OnRetransmission, i));
        Simulator::Schedule(start + NanoSeconds(1), &HookCongState, bulk, i);
    }

    // ---- run ----------------------------------------------------------------

    Simulator::Stop(Seconds(duration));
    auto t0 = std::chrono::steady_clock::now();
    Simulator::Run();
    auto t1 = std::chrono::steady_clock::now();
    double wall = std::chrono::duration<double>(t1 - t0).count();

    // ---- results --------------------------------------------------------------

    uint64_t totalRx = 0;
    std::ostringstream js;
    js << std::setprecision(10);
    js << "{\"ns3_version\": \"" << NS3_WHEEL_VERSION << "\", ";
    js << "\"params\": {\"flows\": " << nFlows << ", \"bottleneck_rate_bps\": " << bottleneckRate
       << ", \"loss\": " << loss << ", \"duration_s\": " << duration << ", \"seed\": " << seed
       << ", \"min_rto_s\": " << minRto << ", \"stagger_ms\": " << staggerMs
       << ", \"qdisc\": \"" << qdisc << "\", \"queue_pkts\": " << queue
       << ", \"derandomize\": " << (derandomize ? "true" : "false")
       << ", \"ecn\": " << (ecn ? "true" : "false") << "}, ";
    js << "\"flows\": [";
    for (uint32_t i = 0; i < nFlows; ++i)
    {
        uint64_t rx = sinks[i]->GetTotalRx();
        totalRx += rx;
        js << (i ? ", " : "") << "{\"goodput_bps\": " << (rx * 8.0 / duration)
           << ", \"rx_bytes\": " << rx << ", \"retransmissions\": " << g_flowStats[i].retransmissions
           << ", \"fast_recoveries\": " << g_flowStats[i].fastRecoveries
           << ", \"cwr_entries\": " << g_flowStats[i].cwrEntries
           << ", \"timeouts\": " << g_flowStats[i].timeouts
           << ", \"established_s\": " << g_flowStats[i].establishedAt << "}";
    }
    js << "], ";
    js << "\"total_goodput_bps\": " << (totalRx * 8.0 / duration) << ", ";
    js << "\"delivered_packets\": " << (totalRx / kSegmentSize) << ", ";
    js << "\"wall_s\": " << wall << ", ";
    js << "\"drops\": {\"bottleneck_tc_full_queue\": " << g_counters.r1TcDrops
       << ", \"bottleneck_queue\": " << g_counters.bottleneckQueueDrops
       << ", \"bottleneck_mac_tx\": " << g_counters.bottleneckMacTxDrops
       << ", \"random_loss\": " << g_counters.randomLosses
       << ", \"elsewhere\": " << g_counters.otherDrops << "}, ";
    js << "\"bottleneck\": {\"max_queue_pkts\": " << g_counters.maxBottleneckQueue
       << ", \"tx_packets\": " << g_counters.bottleneckTxPackets
       << ", \"tx_bytes\": " << g_counters.bottleneckTxBytes
       << ", \"max_frame_bytes\": " << g_counters.bottleneckMaxPacket << "}";
    if (bnQdisc)
    {
        // Drops by the reason ns-3 gives (e.g. "Overlimit drop", "Unforced
        // drop", "Target exceeded drop"), before enqueue and after dequeue.
        const QueueDisc::Stats& st = bnQdisc->GetStats();
        auto reasons = [&js](const auto& m) {
            js << "{";
            bool first = true;
            for (const auto& [reason, n] : m)
            {
                js << (first ? "" : ", ") << "\"" << reason << "\": " << n;
                first = false;
            }
            js << "}";
        };
        auto [wireMean, wireP95] = MeanP95Ms(g_qdisc.toWire);
        auto [sojMean, sojP95] = MeanP95Ms(g_qdisc.sojourn);
        js << ", \"qdisc\": {\"kind\": \"" << qdisc << "\", \"drops_before_enqueue\": ";
        reasons(st.nDroppedPacketsBeforeEnqueue);
        js << ", \"drops_after_dequeue\": ";
        reasons(st.nDroppedPacketsAfterDequeue);
        js << ", \"marks\": ";
        reasons(st.nMarkedPackets);
        js << ", \"dropped\": " << st.nTotalDroppedPackets
           << ", \"marked\": " << st.nTotalMarkedPackets
           << ", \"received\": " << st.nTotalReceivedPackets
           << ", \"sent\": " << st.nTotalSentPackets
           << ", \"queued_at_end\": " << bnQdisc->GetNPackets()
           << ", \"max_queue_pkts\": " << g_qdisc.maxPackets
           << ", \"delay_to_wire_mean_ms\": " << wireMean
           << ", \"delay_to_wire_p95_ms\": " << wireP95
           << ", \"delay_to_wire_samples\": " << g_qdisc.toWire.size()
           << ", \"sojourn_mean_ms\": " << sojMean << ", \"sojourn_p95_ms\": " << sojP95 << "}";
    }
    js << "}";
    std::cout << js.str() << std::endl;

    Simulator::Destroy();
    return 0;
}
