//! The one atomic file write of the project: the schema, node and table
//! options files are replaced whole, so that a crash leaves either the old
//! file or the new one, never a mix.

use std::io::Write;
use std::path::Path;

/// Writes `bytes` to `dir/name` atomically: a temporary file beside it,
/// fsync, rename over the old file, fsync of the directory.
pub fn write_atomically(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = dir.join(format!("{name}.tmp"));
    {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
    }
    std::fs::rename(&tmp, dir.join(name))?;
    std::fs::File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_file_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().expect("temporary directory");
        write_atomically(dir.path(), "f", b"old").expect("first write");
        write_atomically(dir.path(), "f", b"new").expect("second write");
        assert_eq!(std::fs::read(dir.path().join("f")).expect("read"), b"new");
        assert!(!dir.path().join("f.tmp").exists());
    }
}
