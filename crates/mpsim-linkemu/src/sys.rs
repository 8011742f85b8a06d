//! The few Linux interfaces the emulator needs: TUN devices, a monotonic clock, an absolute
//! timer, signals as a file descriptor, and epoll. Thin wrappers that turn -1 into an error.

use std::ffi::CString;
use std::io;
use std::os::fd::RawFd;

fn check(r: libc::c_int, what: &str) -> io::Result<libc::c_int> {
    if r < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("{what}: {e}")));
    }
    Ok(r)
}

/// CLOCK_MONOTONIC in nanoseconds (the clock Python's `time.monotonic_ns` reads).
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const IFF_TUN: libc::c_short = 0x0001;
const IFF_NO_PI: libc::c_short = 0x1000;

#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// Creates a (non-persistent) layer-3 TUN device named `name` and returns its non-blocking
/// descriptor. The device disappears when the descriptor is closed, wherever it was moved.
pub fn open_tun(name: &str) -> io::Result<RawFd> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("bad interface name '{name}'")));
    }
    let path = CString::new("/dev/net/tun").unwrap();
    let fd = check(unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC) }, "open /dev/net/tun")?;
    let mut req = IfReq { name: [0; libc::IFNAMSIZ], flags: IFF_TUN | IFF_NO_PI, _pad: [0; 22] };
    req.name[..name.len()].copy_from_slice(name.as_bytes());
    if let Err(e) = check(unsafe { libc::ioctl(fd, TUNSETIFF as _, &mut req) }, &format!("TUNSETIFF {name}")) {
        unsafe { libc::close(fd) };
        return Err(e);
    }
    Ok(fd)
}

/// Reads one packet; `Ok(None)` when nothing is waiting.
pub fn read_packet(fd: RawFd, buf: &mut [u8]) -> io::Result<Option<usize>> {
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(None),
            _ => Err(e),
        };
    }
    Ok(Some(n as usize))
}

/// Writes one packet into the device's network stack; false if the stack refused it.
pub fn write_packet(fd: RawFd, buf: &[u8]) -> bool {
    unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) == buf.len() as isize }
}

/// A CLOCK_MONOTONIC timerfd armed with absolute deadlines.
pub fn timerfd() -> io::Result<RawFd> {
    check(unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) }, "timerfd_create")
}

/// Arms `fd` to fire at `at_ns` on CLOCK_MONOTONIC (0 disarms).
pub fn arm_timer(fd: RawFd, at_ns: u64) {
    let ts = libc::timespec { tv_sec: (at_ns / 1_000_000_000) as _, tv_nsec: (at_ns % 1_000_000_000) as _ };
    let spec = libc::itimerspec { it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 }, it_value: ts };
    unsafe { libc::timerfd_settime(fd, libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut()) };
}

pub fn drain(fd: RawFd) {
    let mut b = [0u8; 128];
    unsafe { libc::read(fd, b.as_mut_ptr().cast(), b.len()) };
}

/// SIGINT, SIGTERM and SIGHUP, blocked and delivered through a descriptor.
pub fn signalfd() -> io::Result<RawFd> {
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaddset(&mut set, s);
        }
        check(libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()), "sigprocmask")?;
        check(libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC), "signalfd")
    }
}

pub fn epoll() -> io::Result<RawFd> {
    check(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) }, "epoll_create1")
}

pub fn epoll_add(ep: RawFd, fd: RawFd, token: u64) -> io::Result<()> {
    let mut ev = libc::epoll_event { events: libc::EPOLLIN as u32, u64: token };
    check(unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, fd, &mut ev) }, "epoll_ctl").map(|_| ())
}

/// Waits for events (no timeout: the timerfd bounds the wait); returns the tokens.
pub fn epoll_wait(ep: RawFd, out: &mut Vec<u64>) {
    let mut evs = [libc::epoll_event { events: 0, u64: 0 }; 32];
    let n = unsafe { libc::epoll_wait(ep, evs.as_mut_ptr(), evs.len() as i32, -1) };
    out.clear();
    for e in evs.iter().take(n.max(0) as usize) {
        out.push(e.u64);
    }
}

/// Asks for a real-time priority and a 1 µs timer slack, so that deliveries are not late
/// behind other processes' work; returns whether the priority was granted.
pub fn realtime() -> bool {
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
        let p = libc::sched_param { sched_priority: 20 };
        libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) == 0
    }
}
