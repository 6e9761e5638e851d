package engine

import (
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
