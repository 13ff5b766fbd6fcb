package v03

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"

	"github.com/a2akit/idempotency/middleware/internal/v03/kindjson"
	"github.com/a2akit/idempotency/middleware/internal/v03/pbjson"
)

// The v0.3 dialects convert tasks and messages between v1.0 JSON and v0.3's two
// shapes as a2a-go does (a2acompat/a2av0 for JSON-RPC, a2apb/v0/pbjson for
// HTTP+JSON), so that a v0.3 client gets from the middleware what it gets from
// a2a-go's v0.3 handlers. testdata/conversions03.json holds a2a-go's conversions of
// tasks and messages with every kind of part, state and role (the harness module's
// TestConversionFixtureIsA2AGo holds the fixture to a2a-go itself), and this test
// holds the codecs to it, on the JSON they produce (compared as decoded values: key
// order and number spelling may differ, since the codecs keep opaque values as they
// came).

// sameJSON reports whether a and b decode to the same value.
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// roundTrip returns the conversion of a v1.0 task there and back.
func roundTrip(there, back func([]byte) ([]byte, error)) func([]byte) ([]byte, error) {
	return func(data []byte) ([]byte, error) {
		mid, err := there(data)
		if err != nil {
			return nil, err
		}
		return back(mid)
	}
}

// codecConversions are the middleware's conversions, by the fixture's names.
var codecConversions = map[string]func([]byte) ([]byte, error){
	"v1.0 task to JSON-RPC v0.3":           kindjson.TaskFromV1,
	"v1.0 task to HTTP+JSON v0.3":          pbjson.TaskFromV1,
	"v1.0 message to JSON-RPC v0.3":        kindjson.MessageFromV1,
	"v1.0 message to HTTP+JSON v0.3":       pbjson.MessageFromV1,
	"JSON-RPC v0.3 task to v1.0":           kindjson.TaskToV1,
	"JSON-RPC v0.3 message to v1.0":        kindjson.MessageToV1,
	"HTTP+JSON v0.3 task to v1.0":          pbjson.TaskToV1,
	"HTTP+JSON v0.3 message to v1.0":       pbjson.MessageToV1,
	"v1.0 task to JSON-RPC v0.3 and back":  roundTrip(kindjson.TaskFromV1, kindjson.TaskToV1),
	"v1.0 task to HTTP+JSON v0.3 and back": roundTrip(pbjson.TaskFromV1, pbjson.TaskToV1),
}

// conversionCase is a case of testdata/conversions03.json.
type conversionCase struct {
	Conversion string          `json:"conversion"`
	In         json.RawMessage `json:"in"`
	Want       json.RawMessage `json:"want"`
}

// conversionCases reads testdata/conversions03.json.
func conversionCases(tb testing.TB) []conversionCase {
	tb.Helper()
	var cases []conversionCase
	b, err := os.ReadFile("testdata/conversions03.json")
	if err != nil {
		tb.Fatal(err)
	}
	if err := json.Unmarshal(b, &cases); err != nil {
		tb.Fatalf("testdata/conversions03.json: %v", err)
	}
	return cases
}

func TestConversionsAgreeWithA2AGo(t *testing.T) {
	cases := conversionCases(t)
	seen := map[string]bool{}
	for _, tc := range cases {
		convert, ok := codecConversions[tc.Conversion]
		if !ok {
			t.Fatalf("the fixture names conversion %q, which the middleware does not have", tc.Conversion)
		}
		seen[tc.Conversion] = true
		got, err := convert(tc.In)
		if err != nil {
			t.Fatalf("%s of %s: %v; a2a-go converts it to %s", tc.Conversion, tc.In, err, tc.Want)
		}
		if !sameJSON(got, tc.Want) {
			t.Fatalf("%s of %s:\n got %s\nwant %s", tc.Conversion, tc.In, got, tc.Want)
		}
	}
	for name := range codecConversions {
		if !seen[name] {
			t.Errorf("the fixture has no case of %s", name)
		}
	}
}

// FuzzConversions holds the codecs to what the answers of any server need: no input
// makes a conversion panic, and what a conversion returns is JSON. (Agreement with
// a2a-go is TestConversionsAgreeWithA2AGo's, on the fixture.)
func FuzzConversions(f *testing.F) {
	cases := conversionCases(f)
	seen := map[string]bool{}
	for _, tc := range cases {
		if !seen[string(tc.In)] {
			seen[string(tc.In)] = true
			f.Add([]byte(tc.In))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for name, convert := range codecConversions {
			out, err := convert(data)
			if err == nil && !json.Valid(out) {
				t.Fatalf("%s of %s returned %s, which is not JSON", name, data, out)
			}
		}
	})
}
