//! Wire sizes of QUIC packets and frames (RFC 9000 §12-19), with no cryptography: the AEAD
//! tag's bytes are counted, nothing is encrypted.

/// IPv4 and UDP headers under every QUIC packet.
pub const IP_UDP: u32 = 20 + 8;
/// The smallest IP packet a QUIC flow may use: a UDP payload of 1,200 bytes (RFC 9000 §14).
pub const MIN_IP_PACKET: u32 = 1200 + IP_UDP;
/// The short header's first byte and the destination connection ID (8 bytes, a common
/// choice of implementations; RFC 9000 §17.3.1).
pub const SHORT_HEADER: u32 = 1 + 8;
/// AEAD_AES_128_GCM's tag (RFC 9001 §5.3).
pub const AEAD_TAG: u32 = 16;
/// RFC 9002's kGranularity.
pub const GRANULARITY_NS: u64 = 1_000_000;
/// RFC 9000 §18.2's default max_ack_delay.
pub const MAX_ACK_DELAY_NS: u64 = 25_000_000;
/// RFC 9002's kPacketThreshold.
pub const PACKET_THRESHOLD: u64 = 3;
/// RFC 9002's kPersistentCongestionThreshold.
pub const PERSISTENT_CONGESTION_THRESHOLD: u64 = 3;
/// Packet numbers of the receiver's ACK packets: the peer never acknowledges them in this
/// model, so they take the 2 bytes a long-running receiver typically uses.
pub const ACK_PACKET_PN_LEN: u32 = 2;
/// Most ACK ranges one ACK frame carries (older ranges were reported by earlier ACKs).
pub const MAX_ACK_RANGES: usize = 32;

/// Multipath QUIC's PATH_ABANDON, PATH_STATUS_BACKUP and PATH_STATUS_AVAILABLE frame types and the
/// PATH_UNSTABLE_OR_POOR error code (the codepoints of draft-ietf-quic-multipath-21, which
/// keeps draft-19's frame layouts): two-byte variable-length integers.
pub const PATH_ABANDON: u64 = 0x3e75;
pub const PATH_STATUS_BACKUP: u64 = 0x3e76;
pub const PATH_STATUS_AVAILABLE: u64 = 0x3e77;
pub const PATH_UNSTABLE_OR_POOR: u64 = 0x3e76;
/// Consecutive probe timeouts without an ACK after which a path is abandoned.
pub const ABANDON_PTOS: u32 = 3;

/// PATH_ABANDON (type, path identifier, error code PATH_UNSTABLE_OR_POOR).
pub fn path_abandon_frame(path: u64) -> u32 {
    varint_len(PATH_ABANDON) + varint_len(path) + varint_len(PATH_UNSTABLE_OR_POOR)
}

/// PATH_STATUS_BACKUP or PATH_STATUS_AVAILABLE (type, path identifier, path status
/// sequence number): both types take two bytes.
pub fn path_status_frame(path: u64, seq: u64) -> u32 {
    debug_assert_eq!(varint_len(PATH_STATUS_BACKUP), varint_len(PATH_STATUS_AVAILABLE));
    varint_len(PATH_STATUS_BACKUP) + varint_len(path) + varint_len(seq)
}

/// Bytes of a variable-length integer (RFC 9000 §16).
pub fn varint_len(v: u64) -> u32 {
    match v {
        0..=63 => 1,
        64..=16_383 => 2,
        16_384..=1_073_741_823 => 4,
        _ => 8,
    }
}

/// Bytes of packet number `pn` given the largest acknowledged one (RFC 9000 §17.1 and
/// Appendix A.2): enough to represent twice the packets in flight.
pub fn pn_len(pn: u64, largest_acked: Option<u64>) -> u32 {
    let unacked = match largest_acked {
        Some(l) => pn - l,
        None => pn + 1,
    };
    // min_bits = log2(unacked) + 1
    let min_bits = 64 - unacked.leading_zeros() + 1;
    min_bits.div_ceil(8).min(4)
}

/// Bytes of a STREAM frame header carrying `len` bytes at `offset` of stream `id`, with the
/// Length field (type, stream id, offset when nonzero, length; the FIN bit is in the type).
pub fn stream_frame_header(id: u64, offset: u64, len: u64) -> u32 {
    1 + varint_len(id) + if offset > 0 { varint_len(offset) } else { 0 } + varint_len(len)
}

/// Bytes of an ACK frame (RFC 9000 §19.3) with `ranges` (largest first, inclusive) and an
/// encoded ack delay of `ack_delay_us` (exponent 3: units of 8 µs).
pub fn ack_frame(ranges: &[(u64, u64)], ack_delay_us: u64) -> u32 {
    let Some(&(first_lo, largest)) = ranges.first() else { return 0 };
    let mut n = 1 + varint_len(largest) + varint_len(ack_delay_us >> 3) + varint_len(ranges.len() as u64 - 1);
    n += varint_len(largest - first_lo);
    let mut prev_lo = first_lo;
    for &(lo, hi) in &ranges[1..] {
        n += varint_len(prev_lo - hi - 2) + varint_len(hi - lo);
        prev_lo = lo;
    }
    n
}

/// MAX_DATA (type, value) and MAX_STREAM_DATA of stream 0 (type, stream id, value).
pub fn max_data_frames(max_data: u64, max_stream_data: u64) -> u32 {
    max_data_frame(max_data) + max_stream_data_frame(0, max_stream_data)
}

/// MAX_DATA (type, value).
pub fn max_data_frame(max_data: u64) -> u32 {
    1 + varint_len(max_data)
}

/// MAX_STREAM_DATA (type, stream id, value).
pub fn max_stream_data_frame(id: u64, max_stream_data: u64) -> u32 {
    1 + varint_len(id) + varint_len(max_stream_data)
}

/// MAX_STREAMS for unidirectional streams (type 0x13, value).
pub fn max_streams_frame(max_streams: u64) -> u32 {
    1 + varint_len(max_streams)
}

/// RESET_STREAM's frame type (RFC 9000 §19.4).
pub const RESET_STREAM: u64 = 0x04;
/// The application error code a late frame's stream is reset with: DELIVERY_TIMEOUT (0x2) of
/// Media over QUIC Transport's stream reset error codes (draft-ietf-moq-transport, the same
/// value from draft-12 to draft-19).
pub const DELIVERY_TIMEOUT: u64 = 0x2;

/// RESET_STREAM (type, stream id, application error code, final size).
pub fn reset_stream_frame(id: u64, error_code: u64, final_size: u64) -> u32 {
    varint_len(RESET_STREAM) + varint_len(id) + varint_len(error_code) + varint_len(final_size)
}

/// STREAM_DATA_BLOCKED (type, stream id, limit).
pub fn blocked_frame(limit: u64) -> u32 {
    1 + varint_len(0) + varint_len(limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_have_rfc_9000_sizes() {
        assert_eq!([varint_len(63), varint_len(64), varint_len(16_383), varint_len(16_384)], [1, 2, 2, 4]);
        assert_eq!(varint_len(1 << 30), 8);
    }

    #[test]
    fn packet_numbers_follow_appendix_a2() {
        // RFC 9000 A.2's example: 0xac5c02 acknowledged, sending 0xace8fe needs 16 bits
        assert_eq!(pn_len(0xace8fe, Some(0xabe8b3)), 3);
        assert_eq!(pn_len(0xac5c02, Some(0xabe8b3)), 2);
        assert_eq!(pn_len(0, None), 1);
        assert_eq!(pn_len(127, None), 2);
        assert_eq!(pn_len(126, None), 1);
        assert_eq!(pn_len(u64::MAX / 2, Some(0)), 4);
    }

    #[test]
    fn ack_frames_grow_with_their_ranges() {
        assert_eq!(ack_frame(&[(0, 10)], 0), 5);
        assert_eq!(ack_frame(&[(20, 30), (0, 10)], 0), 7);
        assert_eq!(ack_frame(&[], 0), 0);
    }

    #[test]
    fn stream_frames_size_their_stream_id_and_offset() {
        assert_eq!(stream_frame_header(0, 0, 1440), 1 + 1 + 2);
        assert_eq!(stream_frame_header(0, 1440, 1440), 1 + 1 + 2 + 2);
        // stream 66 needs a two-byte ID, offset 16,384 a four-byte one
        assert_eq!(stream_frame_header(66, 16_384, 1440), 1 + 2 + 4 + 2);
        assert_eq!(max_data_frames(1 << 20, 1 << 20), max_data_frame(1 << 20) + max_stream_data_frame(0, 1 << 20));
        assert_eq!(max_stream_data_frame(6, 100), 1 + 1 + 2);
        assert_eq!(max_streams_frame(125), 1 + 2);
    }

    #[test]
    fn reset_stream_frames_size_each_field() {
        // stream 2, DELIVERY_TIMEOUT, nothing sent: four one-byte fields
        assert_eq!(reset_stream_frame(2, DELIVERY_TIMEOUT, 0), 4);
        // stream 402 (two bytes), final size 150,000 (four bytes)
        assert_eq!(reset_stream_frame(402, DELIVERY_TIMEOUT, 150_000), 1 + 2 + 1 + 4);
    }

    #[test]
    fn multipath_control_frames_take_two_byte_types() {
        assert_eq!(path_abandon_frame(1), 2 + 1 + 2);
        assert_eq!(path_status_frame(1, 0), 2 + 1 + 1);
    }
}
