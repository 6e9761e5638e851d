package record

import (
	"errors"
	"fmt"
	"testing"
)

func TestValidateRefusesRecordsNamingNobody(t *testing.T) {
	ok := Record{Kind: "k", Version: 1, Writer: "n1", Generation: 1, Subject: "s"}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	noWriter, noGen := ok, ok
	noWriter.Writer, noGen.Generation = "", 0
	if noWriter.Validate() == nil || noGen.Validate() == nil {
		t.Fatal("a record naming no writer or generation validated")
	}
}

func TestDecodeNewerVersionIsUndecodable(t *testing.T) {
	data, _ := Encode(&Record{Kind: "k", Version: 1, Writer: "n", Generation: 1, Subject: "s", Scope: []string{"item:x"}})
	r, err := Decode(data)
	if err != nil || r.Kind != "k" {
		t.Fatal(r, err)
	}
	_, err = Decode(fmt.Appendf(nil, `{"kind":"k","v":%d,"writer":"n","gen":1,"subject":"s","scope":["item:y"]}`, FormatVersion+1))
	var ue *UndecodableError
	if !errors.As(err, &ue) || !errors.Is(err, ErrUndecodable) || !ue.ScopeKnown || ue.Scope[0] != "item:y" {
		t.Fatalf("%v", err)
	}
	_, err = Decode([]byte(`not json`))
	if !errors.As(err, &ue) || ue.ScopeKnown {
		t.Fatalf("%v", err)
	}
}

func FuzzDecodeRecord(f *testing.F) {
	f.Add([]byte(`{"kind":"k","v":1,"writer":"n","gen":1,"subject":"s"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Decode(data)
		if err == nil && (r.Kind == "" || r.Version < 1 || r.Version > FormatVersion) {
			t.Fatalf("decoded an invalid record %+v", r)
		}
		if err != nil && !errors.Is(err, ErrUndecodable) {
			t.Fatalf("error not marked undecodable: %v", err)
		}
	})
}
