//! The crypto port on `ring`: the operating system's CSPRNG and SHA-256.

use ring::digest::{SHA256, digest};
use ring::rand::{SecureRandom, SystemRandom};
use stablepay_domain::ports::Crypto;

pub struct RingCrypto {
    rng: SystemRandom,
}

impl RingCrypto {
    pub fn new() -> Self {
        Self { rng: SystemRandom::new() }
    }
}

impl Crypto for RingCrypto {
    fn fill_random(&self, buf: &mut [u8]) {
        // SystemRandom fails only when the OS has no entropy source at all; the process cannot
        // make safe ids or keys then, so it stops rather than continue with weak randomness.
        if self.rng.fill(buf).is_err() {
            tracing::error!("the operating system random source failed");
            std::process::abort();
        }
    }

    fn sha256(&self, data: &[u8]) -> [u8; 32] {
        let mut out = [0u8; 32];
        out.copy_from_slice(digest(&SHA256, data).as_ref());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_vector() {
        let d = RingCrypto::new().sha256(b"abc");
        let hex: String = d.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
}
