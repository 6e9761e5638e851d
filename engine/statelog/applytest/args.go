package applytest

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/cockroachdb/datadriven"

	"github.com/crewlet/crewlet/engine/record"
)

// Args are the arguments of one line of an append block.
type Args []datadriven.CmdArg

// Has reports whether key is given.
func (a Args) Has(key string) bool {
	for _, x := range a {
		if x.Key == key {
			return true
		}
	}
	return false
}

// Strs are key's values (nil where it is not given).
func (a Args) Strs(key string) []string {
	for _, x := range a {
		if x.Key == key {
			return x.Vals
		}
	}
	return nil
}

// Str is key's value, "" where it is not given (key= gives "" too).
func (a Args) Str(key string) string {
	v := a.Strs(key)
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// Ptr is key's value where it is given (a field the record sets: key=
// sets ""), nil where it is not (left alone).
func (a Args) Ptr(key string) *string {
	if !a.Has(key) {
		return nil
	}
	v := a.Str(key)
	return &v
}

// Int is key's value as an integer, 0 where it is not given.
func (a Args) Int(key string) (int64, error) {
	if !a.Has(key) {
		return 0, nil
	}
	n, err := strconv.ParseInt(a.Str(key), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s=%s: %w", key, a.Str(key), err)
	}
	return n, nil
}

// Float is key's value as a number, nil where it is not given.
func (a Args) Float(key string) (*float64, error) {
	if !a.Has(key) {
		return nil, nil
	}
	f, err := strconv.ParseFloat(a.Str(key), 64)
	if err != nil {
		return nil, fmt.Errorf("%s=%s: %w", key, a.Str(key), err)
	}
	return &f, nil
}

// Make is a record of kind on subject declaring scope, its payload
// encoded as the write path encodes a proposal's.
func Make(kind, subject string, scope []string, payload any) (*record.Record, error) {
	data, err := json.Marshal(payload)
	if err != nil {
		return nil, err
	}
	return &record.Record{Kind: kind, Subject: subject, Scope: scope, Payload: data}, nil
}
