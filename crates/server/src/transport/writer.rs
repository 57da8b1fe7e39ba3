//! The outbound half of a connection: encodes queued responses in the
//! connection's current framing (plain frames, v4 compressed bodies, or v5
//! segments), coalesces them into few writes, and switches framing exactly
//! after the message that requires it (the STARTUP response).

use std::sync::Arc;
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use rocksandra_wire::{
    encode_response, encode_response_into, BodyCompression, ErrorKind, ErrorResponse, Frame,
    Response, ResponseEnvelope, SegmentCodec, SegmentCompression, WireError,
};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use super::limits::Activity;
use tracing::error;

/// Bytes gathered from queued responses before they are written.
const WRITE_BATCH_BYTES_MAX: usize = 256 * 1024;

/// How frames go on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// Bare frames; v4 bodies compressed after STARTUP when negotiated.
    Plain(Option<BodyCompression>),
    /// v5 after STARTUP: frames inside checksummed segments.
    Segments(SegmentCompression),
}

/// One item for the writer.
#[derive(Debug)]
pub(crate) enum Outbound {
    /// A response; `then` is the framing for everything after it.
    Response {
        envelope: Box<ResponseEnvelope>,
        then: Option<Framing>,
    },
    /// Responses of requests run inline, one batch of frames read.
    Responses(Vec<ResponseEnvelope>),
    /// Bytes already framed (the reply to an unsupported version).
    Raw(Bytes),
    /// Write what is queued, then close.
    Close,
}

impl Outbound {
    pub(crate) fn response(envelope: ResponseEnvelope) -> Outbound {
        Outbound::Response {
            envelope: Box::new(envelope),
            then: None,
        }
    }
}

/// Encodes into `out`, keeping v5 frames aside until they are packed into segments.
struct Encoder {
    framing: Framing,
    out: BytesMut,
    pending_frames: Vec<Frame>,
    pending_frame_bytes: usize,
}

/// The server error that replaces a response that could not be encoded.
fn encoding_failed(envelope: &ResponseEnvelope, e: WireError) -> ResponseEnvelope {
    error!(
        "cannot encode the response on stream {}: {e}; sending a server error",
        envelope.stream
    );
    let error = ErrorResponse::new(
        ErrorKind::ServerError,
        format!("cannot encode the response: {e}"),
    );
    ResponseEnvelope::new(envelope.version, envelope.stream, Response::Error(error))
}

impl Encoder {
    fn buffered_bytes(&self) -> usize {
        self.out.len() + self.pending_frame_bytes
    }

    fn push_response(&mut self, envelope: &ResponseEnvelope) {
        let compression = match self.framing {
            // The common case: the frame goes straight into the buffer.
            Framing::Plain(None) => {
                if let Err(e) = encode_response_into(envelope, &mut self.out) {
                    let fallback = encoding_failed(envelope, e);
                    if let Err(e) = encode_response_into(&fallback, &mut self.out) {
                        error!("cannot encode an error response either: {e}");
                    }
                }
                return;
            }
            Framing::Plain(compression) => compression,
            Framing::Segments(_) => None,
        };
        let frame = match encode_response(envelope, compression) {
            Ok(frame) => frame,
            Err(e) => match encode_response(&encoding_failed(envelope, e), compression) {
                Ok(frame) => frame,
                Err(e) => {
                    error!("cannot encode an error response either: {e}");
                    return;
                }
            },
        };
        match self.framing {
            Framing::Plain(_) => frame.encode(&mut self.out),
            Framing::Segments(_) => {
                self.pending_frame_bytes += frame.encoded_bytes();
                self.pending_frames.push(frame);
            }
        }
    }

    fn finish_segments(&mut self) {
        let Framing::Segments(compression) = self.framing else {
            return;
        };
        if self.pending_frames.is_empty() {
            return;
        }
        let codec = SegmentCodec::new(compression);
        if let Err(e) = codec.encode_frames(&self.pending_frames, &mut self.out) {
            // Frames are at most i32::MAX bytes and chunked to the segment
            // size, so this does not happen; if it did, the frames are lost
            // and the client times those streams out.
            error!(
                "cannot pack {} frames into segments: {e}",
                self.pending_frames.len()
            );
        }
        self.pending_frames.clear();
        self.pending_frame_bytes = 0;
    }

    fn switch(&mut self, framing: Framing) {
        self.finish_segments();
        self.framing = framing;
    }
}

/// Writes queued responses until `Close`, until every sender is gone, or
/// until the socket fails. Shuts the write side down at the end.
pub(crate) async fn run<W: AsyncWrite + Unpin>(
    mut socket: W,
    mut queue: mpsc::Receiver<Outbound>,
    activity: Option<Arc<Activity>>,
) -> std::io::Result<()> {
    let mut encoder = Encoder {
        framing: Framing::Plain(None),
        out: BytesMut::new(),
        pending_frames: Vec::new(),
        pending_frame_bytes: 0,
    };
    let mut closing = false;
    while let Some(first) = queue.recv().await {
        let mut next = Some(first);
        while let Some(item) = next.take() {
            match item {
                Outbound::Response { envelope, then } => {
                    encoder.push_response(&envelope);
                    if let Some(framing) = then {
                        encoder.switch(framing);
                    }
                }
                Outbound::Responses(envelopes) => {
                    for envelope in &envelopes {
                        encoder.push_response(envelope);
                    }
                }
                Outbound::Raw(bytes) => {
                    encoder.finish_segments();
                    encoder.out.extend_from_slice(&bytes);
                }
                Outbound::Close => {
                    closing = true;
                    break;
                }
            }
            if encoder.buffered_bytes() < WRITE_BATCH_BYTES_MAX {
                next = queue.try_recv().ok();
            }
        }
        encoder.finish_segments();
        socket.write_all(&encoder.out).await?;
        // TLS keeps written bytes in its buffer until flushed (a no-op on TCP).
        socket.flush().await?;
        if let Some(activity) = &activity {
            activity.touch(Instant::now());
        }
        if encoder.out.capacity() > 2 * WRITE_BATCH_BYTES_MAX {
            // Do not keep a buffer sized for one large result for the
            // connection's lifetime.
            encoder.out = BytesMut::new();
        } else {
            encoder.out.clear();
        }
        if closing {
            break;
        }
    }
    socket.shutdown().await
}
