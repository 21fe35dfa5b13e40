package membership

import (
	"errors"
	"testing"

	"github.com/icefloe/icefloe/wire"
)

func key(t *testing.T, pass string) *wire.Key {
	t.Helper()
	k, err := wire.KeyFromPassphrase(pass)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestKeyCheck(t *testing.T) {
	a, b := key(t, "a"), key(t, "b")
	challenge, nonce, err := NewChallenge(a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Answer(b, challenge, "w1"); !errors.Is(err, ErrKeyMismatch) {
		t.Fatalf("answer under another key: %v", err)
	}
	answer, err := Answer(a, challenge, "w1")
	if err != nil {
		t.Fatal(err)
	}
	if inst, err := CheckAnswer(a, answer, nonce); err != nil || inst != "w1" {
		t.Fatalf("answer: instance %q, %v", inst, err)
	}
	_, other, _ := NewChallenge(a)
	if _, err := CheckAnswer(a, answer, other); !errors.Is(err, ErrMalformed) {
		t.Fatalf("answer to another challenge: %v", err)
	}
	// A challenge is not an answer: kinds do not mix.
	if _, err := CheckAnswer(a, challenge, nonce); !errors.Is(err, ErrMalformed) {
		t.Fatalf("challenge taken as answer: %v", err)
	}
}

func TestAnnouncement(t *testing.T) {
	a, b := key(t, "a"), key(t, "b")
	sealed, nonce, err := SealAnnouncement(a, Announcement{Location: "grpc://w:1", TTL: 6e9})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := OpenAnnouncement(b, sealed); !errors.Is(err, ErrKeyMismatch) {
		t.Fatalf("announcement under another key: %v", err)
	}
	got, ack, err := OpenAnnouncement(a, sealed)
	if err != nil || got.Location != "grpc://w:1" || got.Draining {
		t.Fatalf("open: %+v, %v", got, err)
	}
	if err := CheckAck(a, ack, nonce); err != nil {
		t.Fatal(err)
	}
	if err := CheckAck(b, ack, nonce); !errors.Is(err, ErrKeyMismatch) {
		t.Fatalf("ack under another key: %v", err)
	}
	empty, _, _ := SealAnnouncement(a, Announcement{})
	if _, _, err := OpenAnnouncement(a, empty); !errors.Is(err, ErrMalformed) {
		t.Fatalf("announcement without location: %v", err)
	}
	if err := (AnnouncerOptions{}).Validate(); err == nil {
		t.Fatal("empty announcer options validated")
	}
	if _, err := NewDNS(DNSOptions{Target: "no-port"}); err == nil {
		t.Fatal("DNS target without port validated")
	}
}
