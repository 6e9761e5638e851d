package engine

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestForFixedLevel: a maintenance refusal gets the sentence for a caller
// who cannot choose a read level, keeping its code and fields and leaving
// the refusal it came from as it was; other codes keep their messages.
func TestForFixedLevel(t *testing.T) {
	r := Refuse(CodeMaintenance, "read at stale instead").With("mode", "seal")
	f := r.ForFixedLevel()
	if f.Code != CodeMaintenance || f.Fields["mode"] != "seal" || strings.Contains(f.Message, "stale") || !strings.Contains(f.Message, "normal mode") {
		t.Fatalf("fixed-level maintenance: %+v", f)
	}
	if r.Message != "read at stale instead" {
		t.Fatalf("the original changed: %q", r.Message)
	}
	b := Refuse(CodeBehind, "wait for it")
	if b.ForFixedLevel() != b {
		t.Fatalf("behind changed: %+v", b.ForFixedLevel())
	}
}

// TestTryElsewhere: the codes a node without data moves on are exactly
// the ones that prove the call ran nowhere on the refusing node for a
// reason of that node's; an eviction moves only before anything was
// appended (no position). Every other code, and an error that is not a
// refusal, is the call's answer.
func TestTryElsewhere(t *testing.T) {
	moves := map[Code]bool{
		CodeBehind: true, CodeTooStale: true, CodeStalled: true, CodeBelowFloor: true, CodeFloorUnknown: true,
		CodeDeferred: true, CodeDeferredScopeUnknown: true, CodeBrokerUnreachable: true, CodeNoQuorum: true,
		CodeWrongStream: true, CodeEvicted: true,
	}
	for c := range Codes {
		if got := TryElsewhere(Refuse(c, "a sentence.")); got != moves[c] {
			t.Errorf("%s: TryElsewhere %v, want %v", c, got, moves[c])
		}
	}
	at := Refuse(CodeEvicted, "appended, then gated.")
	at.Position = &Position{Stream: StreamTracker, Generation: 1, Seq: 9}
	if TryElsewhere(at) {
		t.Error("an eviction naming the position its record landed at moves")
	}
	if !TryElsewhere(fmt.Errorf("wrapped: %w", Refuse(CodeStalled, "stalled."))) {
		t.Error("a wrapped stalled refusal does not move")
	}
	if TryElsewhere(errors.New("not a refusal")) || TryElsewhere(nil) {
		t.Error("an error that is not a refusal moves")
	}
}

// TestDecidedFromRows: the FromRows column is the set the write path
// re-checks at the log's end.
func TestDecidedFromRows(t *testing.T) {
	rows := map[Code]bool{CodeNotFound: true, CodeStale: true, CodeConflict: true, CodeInvalidArgument: true, CodeAlreadyExists: true}
	for c := range Codes {
		if got := DecidedFromRows(Refuse(c, "a sentence.")); got != rows[c] {
			t.Errorf("%s: DecidedFromRows %v, want %v", c, got, rows[c])
		}
	}
	if DecidedFromRows(errors.New("not a refusal")) {
		t.Error("an error that is not a refusal is decided from rows")
	}
}

// TestCodeRowsNameTheirCode: each row's Code is its key, with a sentence
// and a status, so a row copied from another cannot carry its code.
func TestCodeRowsNameTheirCode(t *testing.T) {
	for c, info := range Codes {
		if info.Code != c || info.Doc == "" || info.HTTPStatus == 0 {
			t.Errorf("row %s: %+v", c, info)
		}
	}
}
