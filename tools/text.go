package tools

import (
	"encoding/json"
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/crewlet/crewlet/engine"
)

// checkText is the one check every text argument passes, list items and
// edge keys included, before anything else reads it: at most maxBytes
// bytes, valid UTF-8 (off the wire: a lone surrogate escape such as
// "\ud800" is not text either, though JSON decoding would quietly make it
// U+FFFD), and no control characters, where long text may still hold line
// breaks and tabs. A NUL byte reaching SQLite ends a statement's text
// early: without this check a search for one answered internal.
func checkText(p Param, raw json.RawMessage, s string) *engine.Refusal {
	if p.MaxBytes > 0 && len(s) > p.MaxBytes {
		return engine.Refuse(engine.CodeInvalidArgument, "Argument %q is %d bytes; at most %d are allowed. Shorten it and call again.", p.Name, len(s), p.MaxBytes)
	}
	if !utf8.Valid(raw) || !utf8.ValidString(s) || loneSurrogate(raw) {
		return engine.Refuse(engine.CodeInvalidArgument, "Argument %q is not valid UTF-8 text. Pass it as plain text.", p.Name)
	}
	for i, r := range s {
		if !unicode.IsControl(r) || p.Long && (r == '\n' || r == '\r' || r == '\t') {
			continue
		}
		if r == 0 {
			return engine.Refuse(engine.CodeInvalidArgument, "Argument %q holds a NUL byte (at byte %d). Pass plain text without it.", p.Name, i)
		}
		if p.Long {
			return engine.Refuse(engine.CodeInvalidArgument, "Argument %q holds the control character U+%04X at byte %d. Text may hold line breaks and tabs but no other control characters; remove it and call again.", p.Name, r, i)
		}
		return engine.Refuse(engine.CodeInvalidArgument, "Argument %q holds the control character U+%04X at byte %d. It is one line of plain text: no line breaks, tabs or other control characters; remove it and call again.", p.Name, r, i)
	}
	return nil
}

// loneSurrogate reports whether a raw JSON string holds a \u escape of a
// UTF-16 surrogate that is not half of a pair: text no UTF-8 can hold.
func loneSurrogate(raw json.RawMessage) bool {
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' || i+1 >= len(raw) {
			continue
		}
		if raw[i+1] != 'u' {
			i++ // an escaped character, \\ included
			continue
		}
		r, ok := hex4(raw, i+2)
		if !ok {
			return true
		}
		switch {
		case r >= 0xDC00 && r <= 0xDFFF:
			return true
		case r >= 0xD800 && r <= 0xDBFF:
			if i+11 >= len(raw) || raw[i+6] != '\\' || raw[i+7] != 'u' {
				return true
			}
			lo, ok := hex4(raw, i+8)
			if !ok || lo < 0xDC00 || lo > 0xDFFF {
				return true
			}
			i += 11
		default:
			i += 5
		}
	}
	return false
}

// hex4 reads the four hex digits at raw[at:].
func hex4(raw json.RawMessage, at int) (rune, bool) {
	if at+4 > len(raw) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(raw[at:at+4]), 16, 32)
	return rune(n), err == nil
}

// maxQuoted is how much of the caller's input a refusal quotes back.
const maxQuoted = 64

// Quote is s quoted for a refusal sentence, cut to its first 64 bytes
// (on a character boundary) and an ellipsis: a refusal names what it
// refuses, and must never echo megabytes of input back.
func Quote(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s…", strconv.Quote(s[:cut]))
}
