package engine

import (
	"strings"
	"unicode/utf8"
)

// CheckText refuses a text argument that is not UTF-8, is empty where it
// is required, or is longer than maxBytes, with the sentence that says how
// to fix it. Every domain's service checks its text fields through it.
func CheckText(field, v string, maxBytes int, required bool) error {
	if !utf8.ValidString(v) {
		return Refuse(CodeInvalidArgument, "%s is not valid UTF-8 text; pass it as plain text.", field)
	}
	if required && strings.TrimSpace(v) == "" {
		return Refuse(CodeInvalidArgument, "%s is empty; give a non-empty %s.", field, field)
	}
	if len(v) > maxBytes {
		return Refuse(CodeInvalidArgument, "%s is %d bytes; at most %d are accepted. Shorten it.", field, len(v), maxBytes)
	}
	return nil
}
