//! Quantities in people's units, shared by every layer (it imports nothing of the crate).

/// Bytes for people: `512 MiB`, `3.2 GiB`.
pub fn human_bytes(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= (1u64 << 30) as f64 {
        format!("{:.1} GiB", b / (1u64 << 30) as f64)
    } else if b >= (1u64 << 20) as f64 {
        format!("{:.0} MiB", b / (1u64 << 20) as f64)
    } else {
        format!("{:.0} KiB", (b / 1024.0).ceil())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_read_in_binary_units() {
        assert_eq!(human_bytes(4 << 30), "4.0 GiB");
        assert_eq!(human_bytes(512 << 20), "512 MiB");
        assert_eq!(human_bytes(1500), "2 KiB");
    }
}
