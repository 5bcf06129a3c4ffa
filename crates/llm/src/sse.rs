//! A small incremental reader for `text/event-stream` bodies: bytes in, `data:` payloads
//! out, whatever way the network splits them.

/// Accumulates bytes and yields complete event payloads.
#[derive(Debug, Default)]
pub(crate) struct SseDecoder {
    buffer: Vec<u8>,
    data: Vec<String>,
}

impl SseDecoder {
    /// Feeds a chunk of the body; returns the payloads of every event it completed.
    pub(crate) fn push(&mut self, chunk: &[u8]) -> Vec<String> {
        self.buffer.extend_from_slice(chunk);
        let mut events = Vec::new();
        while let Some(pos) = self.buffer.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.buffer.drain(..=pos).collect();
            let line = String::from_utf8_lossy(&line);
            let line = line.trim_end_matches(['\n', '\r']);
            if line.is_empty() {
                if !self.data.is_empty() {
                    events.push(self.data.join("\n"));
                    self.data.clear();
                }
            } else if let Some(value) = line.strip_prefix("data:") {
                self.data
                    .push(value.strip_prefix(' ').unwrap_or(value).to_owned());
            }
            // Comments (":") and other fields (event:, id:, retry:) carry nothing we use.
        }
        events
    }

    /// Ends the stream: a last event without its blank line still counts.
    pub(crate) fn finish(&mut self) -> Option<String> {
        if !self.buffer.is_empty() {
            let rest = std::mem::take(&mut self.buffer);
            let line = String::from_utf8_lossy(&rest);
            if let Some(value) = line.trim_end().strip_prefix("data:") {
                self.data.push(value.trim_start().to_owned());
            }
        }
        (!self.data.is_empty()).then(|| std::mem::take(&mut self.data).join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_events_across_arbitrary_chunks() {
        let body = b"data: {\"a\":1}\n\n: keep-alive\n\ndata: {\"b\":2}\r\n\r\ndata: [DONE]\n\n";
        for split in 1..body.len() {
            let mut decoder = SseDecoder::default();
            let mut events = decoder.push(&body[..split]);
            events.extend(decoder.push(&body[split..]));
            assert_eq!(
                events,
                vec!["{\"a\":1}", "{\"b\":2}", "[DONE]"],
                "split at {split}"
            );
        }
    }

    #[test]
    fn joins_multi_line_data_and_flushes_tail() {
        let mut decoder = SseDecoder::default();
        assert_eq!(
            decoder.push(b"data: one\ndata: two\n\ndata: tail"),
            vec!["one\ntwo"]
        );
        assert_eq!(decoder.finish().as_deref(), Some("tail"));
        assert_eq!(decoder.finish(), None);
    }
}
