package usagerec_test

import (
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine/record/recordtest"
	"github.com/crewlet/crewlet/engine/usage/usagerec"
)

// TestEveryKindDecided: every usage record kind has its format-version
// decision (usage.day at 1: no older build runs a usage domain or reads
// its stream), and the domain installs no gate.
func TestEveryKindDecided(t *testing.T) {
	recordtest.EveryKindDecided(t, ".", usagerec.Kinds, nil)
	if usagerec.Kinds[usagerec.KindDay] != 1 {
		t.Fatalf("usage.day is stamped %d", usagerec.Kinds[usagerec.KindDay])
	}
}

// TestSubjectsAndDays: one subject a (node, day, seat), safe names kept
// readable and unsafe ones hashed so two never meet; a day is YYYY-MM-DD
// only; the cutoff keeps the newest day and the 180 before it; buckets
// cover every duration.
func TestSubjectsAndDays(t *testing.T) {
	subs := map[string]bool{}
	for _, k := range [][3]string{{"n1", "2026-03-14", "seat:ana"}, {"n1", "2026-03-14", "operator"}, {"n1", "2026-03-14", ""},
		{"n1", "2026-03-14", "seat:a.b"}, {"n1", "2026-03-14", "seat:a*b"}, {"n2", "2026-03-14", "seat:ana"}, {"n1", "2026-03-15", "seat:ana"},
		{"n1", "2026-03-14", "s_ana"}} {
		s := usagerec.DaySubject(k[0], k[1], k[2])
		if subs[s] {
			t.Fatalf("%v shares subject %s", k, s)
		}
		subs[s] = true
	}
	if got := usagerec.DaySubject("n1", "2026-03-14", "seat:ana"); got != "crewlet.usage.day.n1.2026-03-14.s_ana" {
		t.Fatalf("subject %s", got)
	}
	for _, bad := range []string{"2026-3-14", "2026-02-30", "yesterday", ""} {
		if _, ok := usagerec.ParseDay(bad); ok {
			t.Errorf("%q read as a day", bad)
		}
	}
	if got := usagerec.Cutoff("2026-09-10"); got != "2026-03-14" {
		t.Fatalf("cutoff %s", got)
	}
	if usagerec.Bucket(0) != 0 || usagerec.Bucket(10*time.Millisecond) != 0 || usagerec.Bucket(11*time.Millisecond) != 1 || usagerec.Bucket(time.Hour) != len(usagerec.DurationBucketsMs) {
		t.Fatal("buckets")
	}
}
