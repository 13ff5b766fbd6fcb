package middleware

import (
	"bytes"
	"io"
	"mime"
	"net/http"
)

// maxEventBytes bounds the bytes the middleware holds back while it waits for the
// first event of a stream, as a2a-go's client bounds an event (10 MiB).
const maxEventBytes = 10 << 20

// eventScanner finds the first Server-Sent Event in a stream that arrives in chunks,
// with the rules of a2a-go's SSE reader: lines end in "\n" (a "\r" before it is
// dropped), the values of "data:" lines (one space after the colon dropped) are
// joined with "\n", and a blank line ends an event whose data is not empty. Other
// fields and comments are skipped.
type eventScanner struct {
	pos  int // bytes of buf already scanned (always at a line start)
	data []byte
	// idle is the end of the last blank line before which no event has data: the
	// bytes before it (comments, keep-alives) carry no event.
	idle int
}

// drop forgets the first n bytes of the buffer, which the caller removed; n is at
// most idle.
func (sc *eventScanner) drop(n int) {
	sc.pos -= n
	sc.idle -= n
}

// scan looks for the end of the first event in buf, which holds the stream from its
// start and grows between calls. It returns the event's data and the offset just
// past its blank line. At EOF, an event without a closing blank line still counts
// (as a2a-go's reader counts it); end is then len(buf).
func (sc *eventScanner) scan(buf []byte, atEOF bool) (data []byte, end int, ok bool) {
	for {
		i := bytes.IndexByte(buf[sc.pos:], '\n')
		if i < 0 {
			break
		}
		line := bytes.TrimSuffix(buf[sc.pos:sc.pos+i], []byte("\r"))
		sc.pos += i + 1
		if len(line) == 0 {
			if len(sc.data) > 0 {
				return sc.data, sc.pos, true
			}
			sc.idle = sc.pos
			continue
		}
		sc.addLine(line)
	}
	if atEOF {
		if sc.pos < len(buf) {
			sc.addLine(bytes.TrimSuffix(buf[sc.pos:], []byte("\r")))
			sc.pos = len(buf)
		}
		if len(sc.data) > 0 {
			return sc.data, len(buf), true
		}
	}
	return nil, 0, false
}

func (sc *eventScanner) addLine(line []byte) {
	v, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok {
		return
	}
	v = bytes.TrimPrefix(v, []byte(" "))
	if len(sc.data) > 0 {
		sc.data = append(sc.data, '\n')
	}
	sc.data = append(sc.data, v...)
}

// isEventStream reports whether h declares a Server-Sent Events body.
func isEventStream(h http.Header) bool {
	t, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return t == "text/event-stream"
}

// writeEventHeaders starts a Server-Sent Events answer as a2a-go does.
func writeEventHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	h.Del("Content-Length")
	w.WriteHeader(http.StatusOK)
}

// writeEvent writes data as one Server-Sent Event; a trailing newline is dropped.
// Every line of data (a pretty-printed JSON has many) gets a data: field of its own,
// which an SSE reader joins back with newlines: the event carries data's bytes.
func writeEvent(w io.Writer, data []byte) error {
	data = bytes.TrimRight(data, "\r\n")
	buf := make([]byte, 0, len(data)+8)
	for line := range bytes.Lines(data) {
		buf = append(buf, "data: "...)
		buf = append(buf, bytes.TrimRight(line, "\r\n")...)
		buf = append(buf, '\n')
	}
	buf = append(buf, '\n')
	_, err := w.Write(buf)
	return err
}

// flush flushes w, through http.ResponseController so that wrapped writers work.
func flush(w http.ResponseWriter) {
	_ = http.NewResponseController(w).Flush()
}

// readCloser returns a request body reading b.
func readCloser(b []byte) io.ReadCloser {
	br := &bodyReader{}
	br.r.Reset(b)
	return br
}

// bodyReader is the request body readCloser returns: what io.NopCloser of a
// bytes.Reader is (Read, WriteTo, a Close that does nothing), in one allocation
// instead of two, since every POST the middleware reads gets one.
type bodyReader struct{ r bytes.Reader }

func (br *bodyReader) Read(p []byte) (int, error)         { return br.r.Read(p) }
func (br *bodyReader) WriteTo(w io.Writer) (int64, error) { return br.r.WriteTo(w) }
func (*bodyReader) Close() error                          { return nil }
