package faulttest_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/internal/testkit/wireclient"
	"github.com/a2akit/idempotency/memstore"
	"github.com/a2akit/idempotency/middleware"
)

// marker is part of every malformed key the bad-input tests send, and of other bad
// values, so that the tests can tell whether any of them reached a log.
const marker = "INJECTEDMARKER"

// maxBody is the middleware's body limit in the bad-input tests.
const maxBody = 64 << 10

// message returns a message object with id, carrying the key value keyJSON (raw JSON;
// none when empty) in its metadata, and extra fields.
func message(id, keyJSON, extra string) string {
	m := `{"messageId":"` + id + `","role":"ROLE_USER","parts":[{"text":"hello"}]`
	if keyJSON != "" {
		m += `,"metadata":{"` + idempotency.MetadataKey + `":` + keyJSON + `}`
	}
	return m + extra + `}`
}

// envelope wraps params for the binding of s.
func envelope(s wireclient.Send, params string) string {
	if s.Binding == wireclient.HTTPJSON {
		return params
	}
	method := "SendMessage"
	if s.Streaming {
		method = "SendStreamingMessage"
	}
	return `{"jsonrpc":"2.0","id":"bad","method":"` + method + `","params":` + params + `}`
}

// Bad input is refused clearly, runs nothing, and never reaches a log raw: bodies
// over the limit (413), truncated JSON, wrong types, huge and deep metadata,
// non-UTF-8 keys, keys with CR/LF or NUL, on both bindings, unary and streaming.
func TestBadInput(t *testing.T) {
	var kitLogs, a2aLogs testkit.Buffer
	debug := &slog.HandlerOptions{Level: slog.LevelDebug}
	// a2a-go's transports log through the logger of the request context, which is
	// slog.Default; its handler through a2asrv.WithLogger (Config.Logger).
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&a2aLogs, debug)))
	srv := testkit.NewServer(t, testkit.Config{Agent: testkit.Echo(0),
		Index:      memstore.New(memstore.Options{}),
		Middleware: middleware.Options{MaxBodyBytes: maxBody, Logger: slog.New(slog.NewTextHandler(&kitLogs, debug))},
		Logger:     slog.New(slog.NewTextHandler(&a2aLogs, debug)),
	})
	c := &wireclient.Client{BaseURL: srv.URL}

	valid := `"` + idempotency.NewKey() + `"`
	deep := strings.Repeat(`[`, 11000) + strings.Repeat(`]`, 11000) // past encoding/json's depth limit
	// what: the refusal's kind, and a text its message must contain ("" for any).
	type want struct {
		kind wireclient.Kind
		text string
	}
	keyError := func(text string) want { return want{wireclient.Refused, text} }
	refused := want{wireclient.Refused, ""}
	cases := []struct {
		name string
		body func(s wireclient.Send) string
		want want
	}{
		{"key is a number", keyed(`1234567890123456789`), keyError("not a string")},
		{"key is null", keyed(`null`), keyError("not a string")},
		{"key is an object", keyed(`{"k":"` + marker + `-0123456789"}`), keyError("not a string")},
		{"key is an array", keyed(`["` + marker + `-0123456789"]`), keyError("not a string")},
		{"key is a bool", keyed(`true`), keyError("not a string")},
		{"key too short", keyed(`"` + marker[:8] + `"`), keyError("too short")},
		{"key too long", keyed(`"` + marker + strings.Repeat("x", 300) + `"`), keyError("too long")},
		{"key with CR LF", keyed(`"` + marker + `-0123456789\r\nX-Injected: yes"`), keyError("invalid character")},
		{"key with LF", keyed(`"` + marker + `-0123456789\nlevel=ERROR msg=forged"`), keyError("invalid character")},
		{"key with NUL", keyed(`"` + marker + `-0123456789\u0000"`), keyError("invalid character")},
		{"key with raw CR LF in the JSON string", keyed("\"" + marker + "-0123456789\r\nX-Injected: yes\""), refused},
		{"key not UTF-8", keyed("\"" + marker + "-0123456789\xff\xfe\""), keyError("invalid character")},
		{"key with a lone surrogate", keyed(`"` + marker + `-0123456789\udc00"`), keyError("invalid character")},
		{"key with non-ASCII", keyed(`"` + marker + `-0123456789é"`), keyError("invalid character")},
		{"messageId is a number", func(s wireclient.Send) string {
			return envelope(s, `{"message":{"messageId":5,"role":"ROLE_USER","parts":[{"text":"hi"}],"metadata":{"`+
				idempotency.MetadataKey+`":`+valid+`}}}`)
		}, refused},
		{"metadata is a string", func(s wireclient.Send) string {
			return envelope(s, `{"message":`+strings.Replace(message(s.MessageID, "", ""), `"parts"`, `"metadata":"`+marker+`","parts"`, 1)+`}`)
		}, refused},
		{"parts is a string", func(s wireclient.Send) string {
			return envelope(s, `{"message":`+strings.Replace(message(s.MessageID, valid, ""), `"parts":[{"text":"hello"}]`, `"parts":"`+marker+`"`, 1)+`}`)
		}, refused},
		{"truncated JSON", func(s wireclient.Send) string {
			b := envelope(s, `{"message":`+message(s.MessageID, `"`+marker+`-0123456789"`, "")+`}`)
			return b[:len(b)-20]
		}, refused},
		{"deeply nested metadata", func(s wireclient.Send) string {
			m := message(s.MessageID, valid, "")
			m = strings.Replace(m, valid+`}`, valid+`,"`+marker+`":`+deep+`}`, 1)
			return envelope(s, `{"message":`+m+`}`)
		}, refused},
		{"not JSON", func(s wireclient.Send) string { return marker + " hello" }, refused},
		{"empty body", func(s wireclient.Send) string { return "" }, refused},
		{"huge metadata", func(s wireclient.Send) string {
			return envelope(s, `{"message":`+message(s.MessageID, `"`+marker+strings.Repeat("-", maxBody)+`"`, "")+`}`)
		}, want{wireclient.TooLarge, "exceeds"}},
	}
	n := 0
	for _, m := range modes {
		for _, tc := range cases {
			t.Run(m.String()+"/"+tc.name, func(t *testing.T) {
				n++
				s := wireclient.Send{Binding: m.binding, Streaming: m.streaming, MessageID: fmt.Sprintf("bad-%d", n)}
				body := tc.body(s)
				a, err := c.DoBody(context.Background(), s, []byte(body))
				if err != nil {
					t.Fatal(err)
				}
				if a.Kind != tc.want.kind || !strings.Contains(a.ErrMessage, tc.want.text) {
					t.Errorf("got %v; want %v with a message containing %q\nbody %.200q\nanswer %.500s", a, tc.want.kind, tc.want.text, body, a.Raw)
				}
				if tc.want.text == "not a string" || tc.want.text == "too short" || tc.want.text == "too long" || tc.want.text == "invalid character" {
					if wantCode := map[wireclient.Binding]int{wireclient.JSONRPC: -32602, wireclient.HTTPJSON: 400}[m.binding]; a.Code != wantCode {
						t.Errorf("error code %d, want %d", a.Code, wantCode)
					}
				}
				if strings.Contains(string(a.Raw), marker) {
					t.Errorf("the refusal repeats the bad value: %.300s", a.Raw)
				}
				for name := range a.Header {
					if strings.EqualFold(name, "X-Injected") {
						t.Errorf("response header %s injected", name)
					}
				}
			})
		}
	}
	// Bodies over the limit, with and without a Content-Length.
	for _, m := range modes {
		for _, chunked := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/over the limit/chunked=%t", m, chunked), func(t *testing.T) {
				s := wireclient.Send{Binding: m.binding, Streaming: m.streaming, MessageID: "big", Key: idempotency.NewKey()}
				body := envelope(s, `{"message":`+message("big", valid, `,"extensions":["`+strings.Repeat("x", 2*maxBody)+`"]`)+`}`)
				var r io.Reader = strings.NewReader(body)
				if chunked {
					r = io.MultiReader(r) // hides the length: sent chunked
				}
				req, err := http.NewRequest(http.MethodPost, c.URL(s), r)
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				answer, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != http.StatusRequestEntityTooLarge || !bytes.Contains(answer, []byte("exceeds")) {
					t.Errorf("HTTP %d %.300s; want 413", resp.StatusCode, answer)
				}
			})
		}
	}
	if runs := srv.Runs(); runs != 0 {
		t.Errorf("the agent ran %d times for bad input", runs)
	}
	for name, logs := range map[string]string{"the kit's": kitLogs.String(), "a2a-go's": a2aLogs.String()} {
		if strings.Contains(logs, marker) {
			i := strings.Index(logs, marker)
			t.Errorf("%s logs hold a bad value: …%s…", name, logs[max(0, i-200):min(len(logs), i+100)])
		}
		if strings.ContainsAny(logs, "\r\x00") {
			t.Errorf("%s logs hold a raw CR or NUL", name)
		}
		for _, line := range strings.Split(strings.TrimSuffix(logs, "\n"), "\n") {
			if line != "" && !strings.HasPrefix(line, "time=") {
				t.Errorf("%s logs hold a line that is not a record of their own (a forged line?): %.200q", name, line)
			}
		}
	}
	t.Logf("kit logs: %d bytes, a2a-go logs: %d bytes", len(kitLogs.String()), len(a2aLogs.String()))
}

// keyed returns a body builder for a send whose message carries keyJSON as its key.
func keyed(keyJSON string) func(s wireclient.Send) string {
	return func(s wireclient.Send) string {
		return envelope(s, `{"message":`+message(s.MessageID, keyJSON, "")+`}`)
	}
}
