package middleware

import (
	"testing"
)

func TestEventScanner(t *testing.T) {
	cases := []struct {
		name, stream string
		atEOF        bool
		data         string
		found        bool
		end          int // -1: len(stream)
	}{
		{"a2a-go event", "id: 1\ndata: {\"task\":{}}\n\nid: 2\ndata: x\n\n", false, `{"task":{}}`, true, 25},
		{"crlf", "data: a\r\n\r\n", false, "a", true, -1},
		{"joined data lines", "data: a\ndata:b\n\n", false, "a\nb", true, -1},
		{"comments first", ": keep-alive\n\n: again\n\ndata: a\n\n", false, "a", true, -1},
		{"empty data is no event", "data:\n\ndata: a\n\n", false, "a", true, -1},
		{"incomplete", "data: a\n", false, "", false, 0},
		{"incomplete at EOF", "data: a\n", true, "a", true, -1},
		{"last line without newline at EOF", "data: a", true, "a", true, -1},
		{"other fields", "event: x\nretry: 5\ndata: a\n\n", false, "a", true, -1},
		{"Data is not data", "Data: a\n\n", true, "", false, 0},
	}
	for _, tc := range cases {
		// Feed the stream in every split, as chunks arrive.
		for split := 0; split <= len(tc.stream); split++ {
			var sc eventScanner
			buf := []byte(tc.stream[:split])
			data, end, ok := sc.scan(buf, false)
			if !ok {
				buf = []byte(tc.stream)
				data, end, ok = sc.scan(buf, tc.atEOF)
			}
			want := tc.end
			if want < 0 {
				want = len(tc.stream)
			}
			if ok != tc.found || string(data) != tc.data || (ok && end != want) {
				t.Fatalf("%s (split %d): %q %d %v, want %q %d %v", tc.name, split, data, end, ok, tc.data, want, tc.found)
			}
		}
	}
}

func TestEventScannerIdle(t *testing.T) {
	var sc eventScanner
	buf := []byte(": keep-alive\n\n: again\n\nid: 1\ndata: a")
	if _, _, ok := sc.scan(buf, false); ok || sc.idle != len(": keep-alive\n\n: again\n\n") {
		t.Fatalf("idle %d, ok %v", sc.idle, ok)
	}
	n := sc.idle
	buf = append(buf[:0], buf[n:]...)
	sc.drop(n)
	buf = append(buf, "\n\n"...)
	data, end, ok := sc.scan(buf, false)
	if !ok || string(data) != "a" || end != len(buf) {
		t.Fatalf("after drop: %q %d %v", data, end, ok)
	}
}
