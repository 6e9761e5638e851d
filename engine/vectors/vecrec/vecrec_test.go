package vecrec_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/record/recordtest"
	"github.com/crewlet/crewlet/engine/vectors/vecrec"
)

// TestPayloadsOnTheWire pins each payload's JSON as the stream holds it.
func TestPayloadsOnTheWire(t *testing.T) {
	v := vecrec.EncodeVector([]float32{1, 0})
	for i, c := range []struct {
		payload any
		wire    string
	}{
		{vecrec.Put{Source: "cm_7", Kind: "comment", Owner: "wi_1", Model: "m", Dims: 2, Vector: v, TextHash: "ab"},
			`{"source":"cm_7","kind":"comment","owner":"wi_1","model":"m","dims":2,"vector":"AACAPwAAAAA=","text_hash":"ab"}`},
		{vecrec.Put{Source: "wi_1", Kind: "work_item", Model: "m", Dims: 2, Vector: v, TextHash: "ab"},
			`{"source":"wi_1","kind":"work_item","model":"m","dims":2,"vector":"AACAPwAAAAA=","text_hash":"ab"}`},
		{vecrec.Forget{Source: "pg_1"}, `{"source":"pg_1"}`},
	} {
		got, err := json.Marshal(c.payload)
		if err != nil || string(got) != c.wire {
			t.Errorf("payload %d encodes %s (%v), want %s", i, got, err, c.wire)
		}
	}
	if vecrec.Subject("wi_1") != "crewlet.vectors.wi_1" {
		t.Errorf("subject %q", vecrec.Subject("wi_1"))
	}
}

// TestFormatVersions: both kinds are written at version 1, which every
// build that runs the domain reads; a record stamped past this build's
// format (a later build's field) is undecodable here, so the applier
// retains it rather than apply it without that field.
func TestFormatVersions(t *testing.T) {
	if vecrec.PutVersion != 1 || vecrec.ForgetVersion != 1 {
		t.Fatalf("put v%d, forget v%d: a vectors record past version 1 needs a field this build added", vecrec.PutVersion, vecrec.ForgetVersion)
	}
	for _, kind := range []string{vecrec.KindPut, vecrec.KindForget} {
		data, err := record.Encode(&record.Record{Kind: kind, Version: 1, Writer: "n1", Generation: 1, Subject: vecrec.Subject("wi_1"), Scope: vecrec.Scope("wi_1")})
		if err != nil {
			t.Fatal(err)
		}
		if r, err := record.Decode(data); err != nil || r.Version != 1 {
			t.Errorf("%s at version 1: %v", kind, err)
		}
		data, _ = record.Encode(&record.Record{Kind: kind, Version: record.FormatVersion + 1, Writer: "n1", Generation: 1, Subject: vecrec.Subject("wi_1"), Scope: vecrec.Scope("wi_1")})
		var ue *record.UndecodableError
		if _, err := record.Decode(data); !errors.As(err, &ue) || !ue.ScopeKnown {
			t.Errorf("%s past this build's format: %v, want undecodable with its scope", kind, err)
		}
	}
}

// TestEveryKindDecided: every kind the contract declares has its format
// version in Kinds, none past this build's, none a gate.
func TestEveryKindDecided(t *testing.T) {
	recordtest.EveryKindDecided(t, ".", vecrec.Kinds, nil)
}

func TestVectorEncoding(t *testing.T) {
	in := []float32{0.5, -0.25, 1e-7}
	out, err := vecrec.DecodeVector(vecrec.EncodeVector(in), 3)
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		if in[i] != out[i] {
			t.Fatalf("%v round-trips to %v", in, out)
		}
	}
	if _, err := vecrec.DecodeVector(vecrec.EncodeVector(in), 4); err == nil {
		t.Error("a vector of the wrong length decodes")
	}
	if err := (vecrec.Put{Source: "wi_1", Kind: "work_item", Model: "m", Dims: 3, Vector: vecrec.EncodeVector(in)}).Check(); err != nil {
		t.Error(err)
	}
	if err := (vecrec.Put{Source: "wi_1", Kind: "work_item", Model: "m", Dims: 2, Vector: vecrec.EncodeVector(in)}).Check(); err == nil {
		t.Error("a put whose vector is not its dims passes")
	}
}
