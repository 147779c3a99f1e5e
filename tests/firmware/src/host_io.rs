//! The host's files through semihosting, as `embedded_io` streams: the firmware reads its
//! event frames from one file and writes its answers to another (QEMU runs with
//! `-semihosting-config enable=on,target=native`).

use semihosting::fs::File;
use semihosting::io::{Read as _, Write as _};

/// A semihosting call failed (the host has no more detail than that).
#[derive(Clone, Copy, Debug)]
pub struct HostIoError;

impl core::fmt::Display for HostIoError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "semihosting call failed")
    }
}

impl core::error::Error for HostIoError {}

impl embedded_io::Error for HostIoError {
    fn kind(&self) -> embedded_io::ErrorKind {
        embedded_io::ErrorKind::Other
    }
}

/// A host file as an `embedded_io` reader or writer.
pub struct HostFile(pub File);

impl embedded_io::ErrorType for HostFile {
    type Error = HostIoError;
}

impl embedded_io::Read for HostFile {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Self::Error> {
        self.0.read(buf).map_err(|_| HostIoError)
    }
}

impl embedded_io::Write for HostFile {
    fn write(&mut self, buf: &[u8]) -> Result<usize, Self::Error> {
        self.0.write(buf).map_err(|_| HostIoError)
    }

    fn flush(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}
