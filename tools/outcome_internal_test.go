package tools

import (
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestOutcomeReadFromAnswerBytes: the outcome a served call is counted
// under is the answer's top-level "outcome" string, read from its bytes
// without decoding them: never one nested in the answer, never a string
// value that reads "outcome", and "answered" where there is none — as a
// full decode would say.
func TestOutcomeReadFromAnswerBytes(t *testing.T) {
	cases := map[string]string{
		`{"outcome":"applied","item":{"key":"ENG-1"}}`:                               "applied",
		`{"item":{"outcome":"pending"},"n":1}`:                                       "answered",
		`{"a":"outcome","outcome":"pending"}`:                                        "pending",
		`{"a":["outcome",{"outcome":"x"}],"b":{"c":"}"},"outcome":"unknown"}`:        "unknown",
		`{"t":"a\"outcome\":\"x","outcome":"applied"}`:                               "applied",
		`{"items":[{"outcome":"applied"}],"next_cursor":""}`:                         "answered",
		`{"outcome":{"nested":true}}`:                                                "answered",
		`{"position":"CREWLET_TRACKER_LOG@1:9","outcome": "applied","op_id":"op-1"}`: "applied",
		`{}`: "answered",
	}
	for raw, want := range cases {
		res := &mcp.CallToolResult{StructuredContent: json.RawMessage(raw)}
		if got, code := outcomeOf(res, nil); got != want || code != "" {
			t.Errorf("%s: outcome %q (code %q), want %q", raw, got, code, want)
		}
		// A full decode agrees.
		var probe map[string]any
		if err := json.Unmarshal([]byte(raw), &probe); err != nil {
			t.Fatal(err)
		}
		full, _ := probe["outcome"].(string)
		if full == "" {
			full = "answered"
		}
		if full != want {
			t.Errorf("%s: a full decode says %q, the case says %q", raw, full, want)
		}
	}
}
