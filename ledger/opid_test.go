package ledger

import (
	"strings"
	"testing"
	"time"
)

func TestMintParse(t *testing.T) {
	at := time.Date(2026, 12, 2, 10, 0, 0, 123e6, time.UTC)
	id, err := MintFor(at, "update", "ENG-8", "")
	if err != nil {
		t.Fatal(err)
	}
	s := id.String()
	if !strings.HasSuffix(s, ".update-ENG-8") || s[14] != '7' {
		t.Fatalf("minted %q", s)
	}
	p, err := Parse(s)
	if err != nil || p.Verb != "update" || p.Object != "ENG-8" || !p.Minted.Equal(at) || !p.EngineMinted() {
		t.Fatalf("parsed %+v %v", p, err)
	}
	// A v4 UUID carries no instant: the engine did not mint it.
	p, err = Parse("9b2c7a51-3f0e-4c2d-8e1a-0a1b2c3d4e5f.update-ENG-8")
	if err != nil || p.EngineMinted() {
		t.Fatalf("v4: %+v %v", p, err)
	}
	for _, bad := range []string{"", "x.update-ENG-8", s[:36], s[:36] + ".update", s[:36] + ".Update-ENG-8", s[:36] + ".update-ENG 8", strings.ToUpper(s[:36]) + ".update-ENG-8"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func FuzzParseOpID(f *testing.F) {
	f.Add("01938c2e-5f1a-7b3c-9d4e-0a1b2c3d4e5f.update-ENG-8")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := Parse(s)
		if err == nil && p.String() != s {
			t.Fatalf("%q parsed to %q", s, p.String())
		}
	})
}

func TestSealedIDsMatchOnlyTheirCall(t *testing.T) {
	now := time.Now()
	d1, d2 := Digest("update_work_item", map[string]any{"key": "ENG-8", "title": "a"}), Digest("update_work_item", map[string]any{"key": "ENG-8", "title": "b"})
	if d1 == d2 || Digest("update_work_item", map[string]any{"title": "a", "key": "ENG-8"}) != d1 {
		t.Fatal("digest is not canonical")
	}
	op, err := MintFor(now, "update", "ENG-8", d1)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse(op.String())
	if err != nil || p.UUID.Version() != 7 || p.UUID.Variant().String() != "RFC4122" {
		t.Fatalf("%v %v", p, err)
	}
	if !Matches(p, d1) || Matches(p, d2) {
		t.Fatal("seal does not tell the calls apart")
	}
	a, _ := Derive("unit-1", now, "update", "ENG-8", d1, 0)
	b, _ := Derive("unit-1", now, "update", "ENG-8", d1, 0)
	c, _ := Derive("unit-1", now, "update", "ENG-8", d1, 1)
	e, _ := Derive("unit-2", now, "update", "ENG-8", d1, 0)
	if a != b || a == c || a == e || !Matches(a, d1) || a.Minted.UnixMilli() != now.UnixMilli() {
		t.Fatalf("derive: %v %v %v %v", a, b, c, e)
	}
}
