package icemeta

import (
	"bytes"
	"unicode/utf8"

	"github.com/apache/iceberg-go"
)

// truncateBounds turns the smallest and largest value of a string or
// binary column into Iceberg bounds truncated to n characters (strings)
// or bytes (binaries), n <= 0 meaning full values: the lower bound is the
// prefix, the upper bound the prefix with its last character or byte that
// can be incremented incremented (and what follows dropped); hiOK is false
// when there is none (every character is U+10FFFF, every byte 0xFF).
// Strings that are not valid UTF-8 get no bounds (lo nil). Bounds are
// never nil slices: an empty value is an empty bound.
func truncateBounds(t iceberg.Type, lo, hi []byte, n int) (outLo, outHi []byte, hiOK bool) {
	if _, isString := t.(iceberg.StringType); isString {
		if !utf8.Valid(lo) || !utf8.Valid(hi) {
			return nil, nil, false
		}
		outLo = nonNil(prefixRunes(lo, n))
		outHi, hiOK = upperRunes(hi, n)
		return outLo, nonNil(outHi), hiOK
	}
	if n <= 0 || len(lo) <= n {
		outLo = bytes.Clone(lo)
	} else {
		outLo = bytes.Clone(lo[:n])
	}
	outHi, hiOK = upperBytes(hi, n)
	return nonNil(outLo), nonNil(outHi), hiOK
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// prefixRunes is s cut after n code points (n <= 0: all of s).
func prefixRunes(s []byte, n int) []byte {
	if n <= 0 {
		return bytes.Clone(s)
	}
	i := 0
	for k := 0; k < n && i < len(s); k++ {
		_, size := utf8.DecodeRune(s[i:])
		i += size
	}
	return bytes.Clone(s[:i])
}

// upperRunes is the smallest string of at most n code points that is at
// least s (Iceberg's truncated upper bound).
func upperRunes(s []byte, n int) ([]byte, bool) {
	p := prefixRunes(s, n)
	if len(p) == len(s) {
		return p, true
	}
	for len(p) > 0 {
		r, size := utf8.DecodeLastRune(p)
		p = p[:len(p)-size]
		if next, ok := nextRune(r); ok {
			return utf8.AppendRune(p, next), true
		}
	}
	return nil, false
}

// nextRune is the code point after r that UTF-8 can hold (surrogates are
// skipped); false after U+10FFFF.
func nextRune(r rune) (rune, bool) {
	switch {
	case r >= utf8.MaxRune:
		return 0, false
	case r == 0xD7FF:
		return 0xE000, true
	}
	return r + 1, true
}

// upperBytes is the smallest byte string of at most n bytes that is at
// least b.
func upperBytes(b []byte, n int) ([]byte, bool) {
	if n <= 0 || len(b) <= n {
		return bytes.Clone(b), true
	}
	p := bytes.Clone(b[:n])
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] < 0xFF {
			p[i]++
			return p[:i+1], true
		}
	}
	return nil, false
}
