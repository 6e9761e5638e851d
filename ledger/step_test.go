package ledger

import (
	"testing"
	"time"
)

func TestStepKeepsTheMintInstantAndIsDeterministic(t *testing.T) {
	now := time.UnixMilli(1_790_000_000_123)
	parent, err := MintFor(now, "move", "ENG-8", "")
	if err != nil {
		t.Fatal(err)
	}
	a, err := Step(parent, "move_step", "wi_abc")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Step(parent, "move_step", "wi_abc")
	if a.String() != b.String() {
		t.Fatalf("step ids differ: %s %s", a, b)
	}
	c, _ := Step(parent, "move_step", "wi_abd")
	if c.String() == a.String() {
		t.Fatalf("steps on different tasks share an id: %s", a)
	}
	d, _ := Step(parent, "unmark", "wi_abc")
	if d.String() == a.String() {
		t.Fatalf("different verbs share an id: %s", a)
	}
	if a.UUID[0] != parent.UUID[0] || string(a.UUID[:6]) != string(parent.UUID[:6]) {
		t.Fatalf("mint bits not kept: %s vs %s", a.UUID, parent.UUID)
	}
	p, err := Parse(a.String())
	if err != nil {
		t.Fatal(err)
	}
	if !p.Minted.Equal(parent.Minted) || p.UUID.Version() != 7 {
		t.Fatalf("parsed step minted %v version %d, want %v 7", p.Minted, p.UUID.Version(), parent.Minted)
	}
	if _, err := Step(parent, "Bad Verb", "x"); err == nil {
		t.Fatal("a malformed verb was accepted")
	}
}
