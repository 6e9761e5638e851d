package tools

import (
	"strings"
	"testing"
)

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"ENG-1":                       `"ENG-1"`,
		strings.Repeat("a", 64):       `"` + strings.Repeat("a", 64) + `"`,
		strings.Repeat("a", 65):       `"` + strings.Repeat("a", 64) + `"…`,
		strings.Repeat("é", 40):       `"` + strings.Repeat("é", 32) + `"…`,  // 80 bytes: cut at 64
		"a" + strings.Repeat("é", 40): `"a` + strings.Repeat("é", 31) + `"…`, // never half a character
	} {
		if got := Quote(in); got != want {
			t.Errorf("quote(%.20q…) = %s, want %s", in, got, want)
		}
	}
}

// The text checks are the parser's, not a side effect of a tool: a
// param declared long takes line breaks, one that is not refuses them.
func TestCheckTextLongAndShort(t *testing.T) {
	short := Param{Name: "s", Kind: KindString, MaxBytes: 10}
	long := Param{Name: "l", Kind: KindString, MaxBytes: 10, Long: true}
	if r := checkText(short, []byte(`"a\nb"`), "a\nb"); r == nil {
		t.Error("a line break passed in one-line text")
	}
	if r := checkText(long, []byte(`"a\nb"`), "a\nb"); r != nil {
		t.Errorf("a line break refused in long text: %v", r)
	}
	if r := checkText(long, []byte(`"12345678901"`), "12345678901"); r == nil || !strings.Contains(r.Message, "at most 10") {
		t.Errorf("11 bytes passed a bound of 10: %v", r)
	}
}
