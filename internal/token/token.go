// Package token keeps and finds the bearer tokens of Crewlet's surfaces.
// A node's operator token lives in its data directory (generated on first
// boot, mode 0600, reused on every boot after) unless the config sets
// operator.token; a command that calls a running node finds the token it
// presents in a file, the environment or that data directory. The same
// finding serves the stream client token a node without data presents to
// the brokers. Comparing a presented token is the HTTP guard's job
// (httpedge.Guard), not this package's: here tokens are only kept and found.
package token

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/crewlet/crewlet/engine"
)

const (
	// FileName is the operator token's file inside the data directory.
	FileName = "operator.token"
	// EnvOperator holds the operator token for a command that calls a
	// running node (crewlet mcp --node, crewlet retention status) when no
	// --token-file is given.
	EnvOperator = "CREWLET_OPERATOR_TOKEN"
	// EnvStream holds stream.client.token for a node without data
	// (crewlet mcp --join) when no --token-file is given.
	EnvStream = "CREWLET_STREAM_TOKEN"
	// MinConfigured is the shortest operator.token the config may set: a
	// generated one is 64 hex characters, and a configured one should not
	// be guessable by trying.
	MinConfigured = 16
)

// Check is the rule for a configured operator.token: unset (a token is
// generated), or MinConfigured characters or more without whitespace,
// since a bearer header cannot carry it through intact otherwise.
func Check(configured string) error {
	if configured == "" {
		return nil
	}
	// The value is never echoed: it is a secret.
	if strings.ContainsAny(configured, " \t\r\n") {
		return &engine.ConfigError{Field: "operator.token", Reason: "must not contain whitespace"}
	}
	if len(configured) < MinConfigured {
		return &engine.ConfigError{Field: "operator.token", Reason: "is shorter than 16 characters; leave it unset to have one generated"}
	}
	return nil
}

// Operator returns the operator token a node serves with and where it is
// kept, for the operator to be told: the configured one (operator.token)
// wins; otherwise <dataDir>/operator.token, generated on first boot (32
// random bytes, hex, mode 0600) and reused on every boot after.
func Operator(configured, dataDir string) (token, source string, err error) {
	if configured != "" {
		return configured, "config operator.token", nil
	}
	path := filepath.Join(dataDir, FileName)
	if b, err := os.ReadFile(path); err == nil {
		t := strings.TrimSpace(string(b))
		if t == "" {
			return "", "", fmt.Errorf("operator token file %s is empty: delete it to have a new one generated", path)
		}
		return t, path, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", "", fmt.Errorf("operator token: %w", err)
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return "", "", fmt.Errorf("operator token: %w", err)
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", "", fmt.Errorf("operator token: %w", err)
	}
	t := hex.EncodeToString(raw[:])
	// O_EXCL: two processes booting on one directory must not each write
	// a token and serve with different ones.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		// Another process created it between our read and our create.
		return Operator("", dataDir)
	}
	if err != nil {
		return "", "", fmt.Errorf("operator token: %w", err)
	}
	if _, err := f.WriteString(t + "\n"); err != nil {
		f.Close()
		return "", "", fmt.Errorf("operator token: %w", err)
	}
	// Synced before it is served: a crash must not leave an empty file
	// behind, which the next boot would refuse.
	if err := f.Sync(); err != nil {
		f.Close()
		return "", "", fmt.Errorf("operator token: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", "", fmt.Errorf("operator token: %w", err)
	}
	return t, path, nil
}

// ErrEmpty is a token file that holds nothing but whitespace.
var ErrEmpty = errors.New("is empty")

// FileError is a token file that could not be read (Err is the file
// system's error) or holds no token (Err is ErrEmpty). Each command words
// it after the flag the file came from.
type FileError struct {
	Path string
	Err  error
}

func (e *FileError) Error() string {
	if errors.Is(e.Err, ErrEmpty) {
		return "token file " + e.Path + " is empty"
	}
	return "token file: " + e.Err.Error()
}

func (e *FileError) Unwrap() error { return e.Err }

// ReadFile reads a token file: its content without the surrounding
// whitespace an editor or `echo` leaves, which a bearer header would
// otherwise carry.
func ReadFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", &FileError{Path: path, Err: err}
	}
	t := strings.TrimSpace(string(b))
	if t == "" {
		return "", &FileError{Path: path, Err: ErrEmpty}
	}
	return t, nil
}

// Find returns the token a command presents, from the first place that
// names one: the file it was given (--token-file), then the environment
// variable env, then the operator token file in dataDir (a command run
// beside the node it calls). Empty file, env or dataDir are skipped;
// found is false when nothing names a token. A file that cannot be read
// is a *FileError.
func Find(file, env, dataDir string) (token string, found bool, err error) {
	switch {
	case file != "":
		t, err := ReadFile(file)
		return t, err == nil, err
	case env != "" && os.Getenv(env) != "":
		return strings.TrimSpace(os.Getenv(env)), true, nil
	case dataDir != "":
		t, err := ReadFile(filepath.Join(dataDir, FileName))
		return t, err == nil, err
	}
	return "", false, nil
}
