//! Brotli for `netops serve` (`Accept-Encoding: br`), on the `brotli` crate, which only this
//! crate links: the encoder the kit's brotli step uses once [`offer`] has handed it over
//! (`netops_shared::http::conventions`, "Brotli in the local process only"). The step, its
//! negotiation and its predicate are the kit's; this is only the encoder, set as tower-http's
//! own brotli (async-compression's) was: the brotli crate's default parameters at quality 4.

use std::io;

use brotli::enc::StandardAlloc;
use brotli::enc::backward_references::BrotliEncoderParams;
use brotli::enc::encode::{BrotliEncoderOperation, BrotliEncoderStateStruct};
use netops_shared::http::conventions::{self, Encoder, NewEncoder};

/// tower-http's default brotli quality (as NGINX's on-the-fly brotli): the brotli crate's own
/// default, 11, is far too slow for answers made on the fly.
const QUALITY: i32 = 4;

/// Room for the encoded bytes of one call of the encoder.
const BUFFER: usize = 8 * 1024;

/// Offers brotli in every app this process builds from now on.
pub fn offer() {
    conventions::offer_brotli(|app| {
        app.layer(axum::middleware::from_fn_with_state(
            encoder as NewEncoder,
            conventions::brotli,
        ))
    });
}

/// The encoder of one answer.
fn encoder() -> Box<dyn Encoder> {
    Box::new(Brotli::new())
}

struct Brotli {
    state: BrotliEncoderStateStruct<StandardAlloc>,
    buffer: Box<[u8]>,
}

impl Brotli {
    fn new() -> Brotli {
        let mut state = BrotliEncoderStateStruct::new(StandardAlloc::default());
        state.params = BrotliEncoderParams {
            quality: QUALITY,
            ..BrotliEncoderParams::default()
        };
        Brotli {
            state,
            buffer: vec![0; BUFFER].into_boxed_slice(),
        }
    }

    /// Runs `op` over `input` until the encoder has taken all of it and given back all it has
    /// (for a flush, all it took; to finish, the end of the stream).
    fn run(&mut self, op: BrotliEncoderOperation, input: &[u8]) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        let (mut available_in, mut taken) = (input.len(), 0);
        loop {
            let (mut available_out, mut written) = (self.buffer.len(), 0);
            let ok = self.state.compress_stream(
                op,
                &mut available_in,
                input,
                &mut taken,
                &mut available_out,
                &mut self.buffer,
                &mut written,
                &mut None,
                &mut |_, _, _, _| (),
            );
            if !ok {
                return Err(io::Error::other("the brotli encoder refused its input"));
            }
            out.extend_from_slice(&self.buffer[..written]);
            let done = match op {
                BrotliEncoderOperation::BROTLI_OPERATION_FINISH => self.state.is_finished(),
                _ => available_in == 0 && !self.state.has_more_output(),
            };
            if done {
                return Ok(out);
            }
        }
    }
}

impl Encoder for Brotli {
    fn encode(&mut self, input: &[u8]) -> io::Result<Vec<u8>> {
        self.run(BrotliEncoderOperation::BROTLI_OPERATION_PROCESS, input)
    }

    fn flush(&mut self) -> io::Result<Vec<u8>> {
        self.run(BrotliEncoderOperation::BROTLI_OPERATION_FLUSH, &[])
    }

    fn finish(&mut self) -> io::Result<Vec<u8>> {
        self.run(BrotliEncoderOperation::BROTLI_OPERATION_FINISH, &[])
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    fn decoded(bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        brotli::Decompressor::new(bytes, 4096)
            .read_to_end(&mut out)
            .expect("brotli");
        out
    }

    /// Text that does not compress to nothing: numbered JSON lines.
    fn text(lines: usize) -> Vec<u8> {
        (0..lines)
            .map(|i| {
                format!(
                    "{{\"hostname\":\"PAR-LT-{i:04}\",\"seen\":{}}}\n",
                    i * 7919 % 104729
                )
            })
            .collect::<String>()
            .into_bytes()
    }

    #[test]
    fn what_it_encodes_in_pieces_decodes_to_the_whole() {
        let input = text(20_000);
        let mut encoder = Brotli::new();
        let mut out = Vec::new();
        for piece in input.chunks(3_000) {
            out.extend(encoder.encode(piece).expect("encode"));
        }
        out.extend(encoder.finish().expect("finish"));
        assert!(
            out.len() < input.len() / 4,
            "{} of {}",
            out.len(),
            input.len()
        );
        assert_eq!(decoded(&out), input);
    }

    #[test]
    fn a_flush_gives_back_everything_taken_so_far() {
        let input = text(200);
        let mut encoder = Brotli::new();
        let mut out = encoder.encode(&input).expect("encode");
        out.extend(encoder.flush().expect("flush"));
        // What a client has received after the flush decodes to all the input so far.
        let mut prefix = Vec::new();
        let mut reader = brotli::Decompressor::new(&out[..], 4096);
        let mut chunk = [0; 4096];
        while prefix.len() < input.len() {
            let n = reader.read(&mut chunk).expect("read");
            assert!(n > 0, "only {} of {} bytes", prefix.len(), input.len());
            prefix.extend_from_slice(&chunk[..n]);
        }
        assert_eq!(prefix, input);
        // The stream goes on after a flush.
        out.extend(encoder.encode(b"and the rest").expect("encode"));
        out.extend(encoder.finish().expect("finish"));
        let mut whole = input.clone();
        whole.extend_from_slice(b"and the rest");
        assert_eq!(decoded(&out), whole);
    }

    #[test]
    fn an_empty_body_is_a_valid_empty_stream() {
        let out = Brotli::new().finish().expect("finish");
        assert!(!out.is_empty());
        assert!(decoded(&out).is_empty());
    }
}
