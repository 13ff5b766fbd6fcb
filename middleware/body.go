package middleware

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
)

// bodyChunk is the most the middleware allocates for a body before its bytes arrive,
// whatever Content-Length announces.
const bodyChunk = 32 << 10

// readBody reads r's body when it may be an A2A send, up to MaxBodyBytes, and puts
// back a body that reads the same bytes, with a ContentLength to match. A send is a
// JSON object, and encoding/json (which a2a-go decodes with) accepts nothing before
// its '{' but JSON white space, so readBody first reads until the first other byte:
// when that is not '{', the body is no A2A send, and readBody puts the bytes it read
// back in front of the rest, which the wrapped handler then reads as it arrives
// (isJSON is false). A JSON body is read to its end into a buffer that grows as its
// bytes arrive (see readUpTo): a client that sends headers announcing 10 MiB and then
// one byte holds a few KiB, not 10 MiB.
func (m *middleware) readBody(r *http.Request) (body []byte, isJSON bool, f *failure) {
	limit := m.maxBodyBytes
	if r.Body == nil {
		return nil, false, nil
	}
	buf := make([]byte, 0, firstChunk(r.ContentLength, limit))
	var err error
	for {
		var n int
		n, err = r.Body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if i := firstNonSpace(buf); i >= 0 && buf[i] == '{' {
			break
		} else if i >= 0 || err != nil {
			r.Body = &prefixedBody{prefix: buf, rest: r.Body, err: err}
			return nil, false, nil
		}
		if len(buf) == cap(buf) { // white space only, so far
			if int64(len(buf)) > limit {
				return nil, true, tooLarge(limit)
			}
			buf = slices.Grow(buf, int(min(int64(len(buf)), limit+1-int64(len(buf)))))
		}
	}
	if r.ContentLength > limit {
		return nil, true, tooLarge(limit)
	}
	if err == nil {
		buf, err = readUpTo(r.Body, buf, limit)
	}
	if err != nil && err != io.EOF {
		// err names sockets and addresses (the server's own): the log gets it.
		m.log.LogAttrs(r.Context(), slog.LevelDebug, "idempotency: a request body could not be read", slog.Any("error", err))
		return nil, true, &failure{kind: failUnreadable, message: "the request body could not be read to its end " +
			"(the connection stalled or broke); send the request again"}
	}
	if int64(len(buf)) > limit {
		return nil, true, tooLarge(limit)
	}
	r.Body = readCloser(buf)
	r.ContentLength = int64(len(buf))
	return buf, true, nil
}

// tooLarge is the failure of a JSON body over limit.
func tooLarge(limit int64) *failure {
	return &failure{kind: failTooLarge, message: fmt.Sprintf("the request body exceeds %d bytes, the limit of the "+
		"idempotency middleware; send a smaller request, or ask the operator to raise MaxBodyBytes", limit)}
}

// firstChunk is the capacity of the buffer a body is first read into: bodyChunk, or
// the announced length and one byte more (to read the end of the body) when that is
// smaller and not negative, and never more than limit+1.
func firstChunk(length, limit int64) int64 {
	size := int64(bodyChunk)
	if length >= 0 && length < size {
		size = length + 1
	}
	return min(size, limit+1)
}

// readUpTo reads body on into buf, to its end (returning io.EOF) or to one byte past
// limit, doubling buf as the bytes arrive, so that what it holds is at most twice what
// came.
func readUpTo(body io.Reader, buf []byte, limit int64) ([]byte, error) {
	for int64(len(buf)) <= limit {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, len(buf))
		}
		n, err := body.Read(buf[len(buf):int(min(int64(cap(buf)), limit+1))])
		buf = buf[:len(buf)+n]
		if err != nil {
			return buf, err
		}
	}
	return buf, nil
}

// firstNonSpace returns the index of the first byte of b that is not JSON white
// space, or -1.
func firstNonSpace(b []byte) int {
	for i, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r':
		default:
			return i
		}
	}
	return -1
}

// prefixedBody is a request body whose first bytes the middleware has read: it reads
// them again, then the rest of the body as it arrives; when the middleware's read
// ended the body (err), it ends with that.
type prefixedBody struct {
	prefix []byte
	rest   io.ReadCloser
	err    error
}

func (b *prefixedBody) Read(p []byte) (int, error) {
	if len(b.prefix) > 0 {
		n := copy(p, b.prefix)
		b.prefix = b.prefix[n:]
		return n, nil
	}
	if b.err != nil {
		return 0, b.err
	}
	return b.rest.Read(p)
}

func (b *prefixedBody) Close() error { return b.rest.Close() }
