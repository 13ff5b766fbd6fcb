package idempotency

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"unicode/utf8"
)

// MaxLogValueLength is the longest client-chosen value [LogValue] logs as it is.
const MaxLogValueLength = 64

// LogValue shortens a value a client chose (a scope, a tenant, a message or task id)
// for logs, so that a client cannot make the server write more than a few dozen bytes
// of log per value: a value of at most [MaxLogValueLength] bytes is returned as it is;
// a longer one becomes its first 32 bytes (cut at a UTF-8 boundary), then "…", its
// length and the first 8 bytes of its SHA-256 in hex, which tells two long values
// apart without logging them: "tenant-aaaa…(4194304 bytes, sha256:1f2e…)".
// Keys are secrets and go through [RedactKey] instead.
func LogValue(s string) string {
	if len(s) <= MaxLogValueLength {
		return s
	}
	cut := 32
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	sum := sha256.Sum256([]byte(s))
	return s[:cut] + "…(" + strconv.Itoa(len(s)) + " bytes, sha256:" + hex.EncodeToString(sum[:8]) + ")"
}
