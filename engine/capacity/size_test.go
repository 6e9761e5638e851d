package capacity

import (
	"errors"
	"strings"
	"testing"
)

const (
	trk = "CREWLET_TRACKER_LOG"
	pgs = "CREWLET_PAGES_LOG"
)

// logs are the two logs this build runs, as their specs ask; set and
// held are optional overrides by stream.
func logs(set, held map[string]int64) []Log {
	out := []Log{
		{Name: "tracker", Stream: trk, Field: "stream.tracker_log_max_bytes", Ask: VolumeQuarter(4*GiB, 64*GiB)},
		{Name: "pages", Stream: pgs, Field: "stream.pages_log_max_bytes", Ask: QuarterOf(trk)},
	}
	for i := range out {
		out[i].Set = set[out[i].Stream]
		if h, ok := held[out[i].Stream]; ok {
			out[i].Exists, out[i].Held = true, h
		}
	}
	return out
}

type want struct{ ask, fit, create int64 }

// TestSize is the page's rules, one row each.
func TestSize(t *testing.T) {
	cases := []struct {
		name  string
		in    Input
		share int64
		want  map[string]want
	}{
		{"empty broker, room for both asks: each gets its ask",
			Input{Grant: Grant{Limit: 75 * GiB}, VolumeFree: 100 * GiB, Logs: logs(nil, nil)},
			75 * GiB / 2, map[string]want{trk: {25 * GiB, 25 * GiB, 25 * GiB}, pgs: {25 * GiB / 4, 25 * GiB / 4, 25 * GiB / 4}}},
		{"the tracker's ask stops at 64 GiB, the pages' at a quarter of it",
			Input{Grant: Grant{Limit: 768 * GiB}, VolumeFree: 1024 * GiB, Logs: logs(nil, nil)},
			384 * GiB, map[string]want{trk: {64 * GiB, 64 * GiB, 64 * GiB}, pgs: {16 * GiB, 16 * GiB, 16 * GiB}}},
		{"a small volume: the tracker asks its 4 GiB minimum, the asks scale into the share, the pages' goes no lower than the floor",
			Input{Grant: Grant{Limit: 6 * GiB}, VolumeFree: 8 * GiB, Logs: logs(nil, nil)},
			3 * GiB, map[string]want{trk: {4 * GiB, GiB * 12 / 5, GiB * 12 / 5}, pgs: {GiB, Floor, Floor}}},
		{"other streams' reservations leave less to grant",
			Input{Grant: Grant{Limit: 100 * GiB, Reserved: 80 * GiB}, VolumeFree: 100 * GiB, Logs: logs(nil, nil)},
			10 * GiB, map[string]want{trk: {25 * GiB, 8 * GiB, 8 * GiB}, pgs: {25 * GiB / 4, 2 * GiB, 2 * GiB}}},
		{"no limit to read: half the volume's free space",
			Input{VolumeFree: 40 * GiB, Logs: logs(nil, nil)},
			20 * GiB, map[string]want{trk: {10 * GiB, 10 * GiB, 10 * GiB}, pgs: {10 * GiB / 4, 10 * GiB / 4, 10 * GiB / 4}}},
		{"a set ceiling is never scaled, and the pages' asks a quarter of it",
			Input{Grant: Grant{Limit: 8 * GiB}, VolumeFree: 100 * GiB, Logs: logs(map[string]int64{trk: 40 * GiB}, nil)},
			4 * GiB, map[string]want{trk: {40 * GiB, 40 * GiB, 40 * GiB}, pgs: {10 * GiB, Floor, Floor}}},
		{"a restart divides the same half: the existing tracker counts as the logs', the missing pages log gets its fit",
			Input{Grant: Grant{Limit: 75 * GiB, Reserved: 25 * GiB}, VolumeFree: 100 * GiB, Logs: logs(nil, map[string]int64{trk: 25 * GiB})},
			75 * GiB / 2, map[string]want{trk: {25 * GiB, 25 * GiB, 25 * GiB}, pgs: {25 * GiB / 4, 25 * GiB / 4, 25 * GiB / 4}}},
		{"an existing log holding past the share: the new one gets the floor (short of its fit)",
			Input{Grant: Grant{Limit: 100 * GiB, Reserved: 60 * GiB}, VolumeFree: 100 * GiB, Logs: logs(nil, map[string]int64{trk: 60 * GiB})},
			50 * GiB, map[string]want{trk: {25 * GiB, 25 * GiB, 60 * GiB}, pgs: {25 * GiB / 4, 25 * GiB / 4, Floor}}},
		{"never above the empty-broker fit, even where the existing logs leave more",
			Input{Grant: Grant{Limit: 20 * GiB, Reserved: GiB}, VolumeFree: 100 * GiB, Logs: logs(nil, map[string]int64{trk: GiB})},
			10 * GiB, map[string]want{trk: {25 * GiB, 8 * GiB, GiB}, pgs: {25 * GiB / 4, 2 * GiB, 2 * GiB}}},
		{"a set ceiling for the log being created comes off before the unset ones share the rest",
			Input{Grant: Grant{Limit: 20 * GiB}, VolumeFree: 100 * GiB, Logs: logs(map[string]int64{pgs: 6 * GiB}, nil)},
			10 * GiB, map[string]want{trk: {25 * GiB, 4 * GiB, 4 * GiB}, pgs: {6 * GiB, 6 * GiB, 6 * GiB}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := Size(c.in)
			if p.Share != c.share {
				t.Errorf("share %d, want %d", p.Share, c.share)
			}
			for _, s := range p.Logs {
				w := c.want[s.Stream]
				if s.Asked != w.ask || s.Fit != w.fit || s.Create != w.create {
					t.Errorf("%s: ask %d fit %d create %d, want %d %d %d", s.Stream, s.Asked, s.Fit, s.Create, w.ask, w.fit, w.create)
				}
			}
		})
	}
}

// TestSizeGeneral: the table is not the two logs of this build — the
// vector changelog asks the volume's quarter whatever the tracker is set
// to, the usage log a fixed 1 GiB.
func TestSizeGeneral(t *testing.T) {
	ls := append(logs(map[string]int64{trk: 8 * GiB}, nil),
		Log{Stream: "CREWLET_TRACKER_VECTORS", Ask: VolumeQuarter(4*GiB, 64*GiB)},
		Log{Stream: "CREWLET_USAGE_LOG", Ask: Fixed(GiB)})
	p := Size(Input{Grant: Grant{Limit: 300 * GiB}, VolumeFree: 100 * GiB, Logs: ls})
	got := map[string]int64{}
	for _, s := range p.Logs {
		got[s.Stream] = s.Create
	}
	if got[trk] != 8*GiB || got[pgs] != 2*GiB || got["CREWLET_TRACKER_VECTORS"] != 25*GiB || got["CREWLET_USAGE_LOG"] != GiB {
		t.Fatalf("created %v", got)
	}
}

// TestCheck: what the broker cannot reserve is refused naming the
// stream, the bytes, what sets the limit and the field, with only the
// remedies that apply.
func TestCheck(t *testing.T) {
	src := Source{Kind: SourceVolume, StoreDir: "data/stream"}
	in := Input{Grant: Grant{Limit: 8 * GiB}, VolumeFree: 100 * GiB, Logs: logs(map[string]int64{trk: 10 * GiB}, nil)}
	var re *ReserveError
	if err := Check(Size(in), in, src); !errors.As(err, &re) || re.Log.Stream != trk || re.Needed != 10*GiB {
		t.Fatalf("a set ceiling past the limit: %v", err)
	}
	msg := re.Error()
	for _, says := range []string{"CREWLET_TRACKER_LOG needed 10737418240 bytes", "had 8589934592 bytes left", "stream.store_dir (data/stream)",
		"stream.tracker_log_max_bytes is set to 10737418240", "Or set stream.tracker_log_max_bytes to a smaller ceiling", "free space on that volume"} {
		if !strings.Contains(msg, says) {
			t.Errorf("the refusal does not say %q: %s", says, msg)
		}
	}
	// The floors do not fit, the limit is set, the tracker exists: the
	// pages' refusal offers no smaller ceiling and names the tracker's.
	in = Input{Grant: Grant{Limit: 3 * GiB / 2, Reserved: GiB}, VolumeFree: 2 * GiB, Logs: logs(nil, map[string]int64{trk: GiB})}
	err := Check(Size(in), in, Source{Kind: SourceStoreMaxBytes})
	if !errors.As(err, &re) || re.Log.Stream != pgs || re.Needed != Floor {
		t.Fatalf("the floor past the limit: %v", err)
	}
	msg = re.Error()
	for _, says := range []string{"the pages log's ceiling", "stream.pages_log_max_bytes is unset", "raise stream.store_max_bytes", "CREWLET_TRACKER_LOG holds 1073741824 bytes"} {
		if !strings.Contains(msg, says) {
			t.Errorf("the refusal does not say %q: %s", says, msg)
		}
	}
	for _, not := range []string{"smaller ceiling", "free space on that volume"} {
		if strings.Contains(msg, not) {
			t.Errorf("the refusal offers %q, which does not apply: %s", not, msg)
		}
	}
	if err := Check(Size(Input{VolumeFree: GiB, Logs: logs(nil, nil)}), Input{VolumeFree: GiB, Logs: logs(nil, nil)}, src); err != nil {
		t.Fatalf("no limit to read, yet refused: %v", err)
	}
}
