package catalog

import (
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Redaction: what a catalog's properties hold that must never be printed,
// logged or put in an error. Secrets sit in whole values (credential,
// s3.secret-access-key, header.*), in URL user info (postgres://u:pw@h),
// in URL query parameters (?token=…, SAS signatures), and in key=value
// connection strings (host=h password=pw).

// Redaction is the text that stands for a secret.
const Redaction = "<redacted>"

// secretKeyWords are the parts of a property key that mark its value
// secret; every header.* property is secret too (REST catalogs send them
// as HTTP headers: API keys, authorization).
var secretKeyWords = []string{"secret", "credential", "token", "password", "passwd", "pwd", "key-id", "access-key",
	"account-key", "account.key", "jsonkey", "connection-string", "sas", "signature", "private", "apikey",
	"api-key", "api_key", "authorization", "cookie"}

// secretKey tells property keys whose values are secrets.
func secretKey(k string) bool {
	k = strings.ToLower(k)
	if strings.HasPrefix(k, "header.") {
		return true
	}
	for _, s := range secretKeyWords {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}

// secretParam tells URL query parameters and key=value settings whose
// values are secrets.
func secretParam(name string) bool {
	n := strings.ToLower(name)
	if secretKey(n) || n == "sig" || n == "key" || n == "code" || n == "pass" {
		return true
	}
	return strings.HasPrefix(n, "x-amz-") || strings.HasPrefix(n, "x-goog-")
}

// kvSecret finds secret settings in key=value connection strings
// ("host=h password=pw", "Password='p w';"): group 2 is the value.
var kvSecret = regexp.MustCompile(`(?i)(\b(?:password|passwd|pwd|pass|sslpassword|secret|token|api_?key|accountkey|sharedaccesssignature)\s*=\s*)('(?:[^'\\]|\\.)*'|"[^"]*"|[^\s;&]+)`)

// redactValue returns v with its secrets replaced by Redaction, and the
// secrets.
func redactValue(key, v string) (string, []string) {
	if v == "" {
		return v, nil
	}
	if secretKey(key) {
		return Redaction, []string{v}
	}
	var found []string
	if strings.Contains(v, "://") {
		if u, err := url.Parse(v); err != nil {
			if strings.ContainsAny(v, "@?") {
				// A URL that does not parse may still hold user info.
				return Redaction, []string{v}
			}
		} else {
			v, found = redactURL(u, v)
		}
	}
	out := kvSecret.ReplaceAllStringFunc(v, func(m string) string {
		sub := kvSecret.FindStringSubmatch(m)
		if sub[2] == Redaction || sub[2] == "redacted" {
			return m
		}
		found = append(found, sub[2], strings.Trim(sub[2], `'"`))
		return sub[1] + Redaction
	})
	return out, found
}

// redactURL replaces the password and secret query values of u (parsed
// from v).
func redactURL(u *url.URL, v string) (string, []string) {
	var found []string
	changed := false
	if u.User != nil {
		if pw, ok := u.User.Password(); ok {
			found = append(found, pw, url.QueryEscape(pw), url.PathEscape(pw))
			u.User = url.UserPassword(u.User.Username(), "redacted")
			changed = true
		}
	}
	if u.RawQuery != "" {
		q, err := url.ParseQuery(u.RawQuery)
		if err != nil {
			return Redaction, []string{v}
		}
		for name, vals := range q {
			if !secretParam(name) {
				continue
			}
			for i, val := range vals {
				found = append(found, val, url.QueryEscape(val))
				vals[i] = "redacted"
			}
			changed = true
		}
		u.RawQuery = q.Encode()
	}
	if !changed {
		return v, nil
	}
	return u.String(), found
}

// Redacted returns a copy of props with every secret replaced, for
// printing.
func Redacted(props map[string]string) map[string]string {
	out := make(map[string]string, len(props))
	for k, v := range props {
		out[k], _ = redactValue(k, v)
	}
	return out
}

// Secrets returns the secret strings props hold (longest first), for
// scrubbing them from text that might quote them.
func Secrets(props map[string]string) []string {
	var out []string
	for k, v := range props {
		_, s := redactValue(k, v)
		for _, x := range s {
			if len(x) >= 3 && !slices.Contains(out, x) {
				out = append(out, x)
			}
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// Scrub returns text with each of secrets replaced by Redaction.
func Scrub(text string, secrets []string) string {
	for _, s := range secrets {
		text = strings.ReplaceAll(text, s, Redaction)
	}
	return text
}

// ScrubError returns err with each of secrets removed from its message;
// errors.Is and errors.As still see err.
func ScrubError(err error, secrets []string) error {
	if err == nil || len(secrets) == 0 {
		return err
	}
	msg := err.Error()
	if clean := Scrub(msg, secrets); clean != msg {
		return &scrubbed{err: err, msg: clean}
	}
	return err
}

type scrubbed struct {
	err error
	msg string
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

// The secrets of every catalog this process opened (see RegisterSecrets):
// errors that reach a client or a log pass through ScrubText, so that a
// library quoting a URL or a connection string it was given cannot leak
// what it held.
var registry struct {
	mu      sync.RWMutex
	secrets []string
}

// RegisterSecrets adds the secrets of props to what ScrubText removes.
func RegisterSecrets(props map[string]string) {
	s := Secrets(props)
	if len(s) == 0 {
		return
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	for _, x := range s {
		if !slices.Contains(registry.secrets, x) {
			registry.secrets = append(registry.secrets, x)
		}
	}
	slices.SortFunc(registry.secrets, func(a, b string) int { return len(b) - len(a) })
}

// ScrubText returns text without any registered secret.
func ScrubText(text string) string {
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	return Scrub(text, registry.secrets)
}
