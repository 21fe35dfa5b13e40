package membership

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/icefloe/icefloe/wire"
)

// Action types of the membership calls (Flight DoAction).
const (
	// AnnounceAction is a worker telling a coordinator it serves (or is
	// draining) at a location. Served by the coordinator.
	AnnounceAction = "icefloe.membership.announce"
	// KeyCheckAction is a coordinator checking that a worker holds its
	// ticket key. Served by the worker.
	KeyCheckAction = "icefloe.membership.key-check"
)

// Errors of this package.
var (
	// ErrKeyMismatch: the other side sealed its message with another
	// ticket key.
	ErrKeyMismatch = errors.New("membership: ticket key differs: coordinator and workers must share one ticket_key (ICEFLOE_TICKET_KEY)")
	// ErrMalformed: a membership message that does not decode.
	ErrMalformed = errors.New("membership: malformed message")
)

// Sealed messages are wire tickets whose QueryID names the kind and whose
// SQL holds the JSON body, like the coordinator's statement handles.
const (
	kindAnnouncement = "icefloe.membership.announcement"
	kindAck          = "icefloe.membership.ack"
	kindChallenge    = "icefloe.membership.challenge"
	kindAnswer       = "icefloe.membership.answer"
	// messageTTL bounds how long a sealed message can be replayed.
	messageTTL = time.Minute
)

// Announcement is what a worker says about itself.
type Announcement struct {
	// Location is the worker's Flight location, as clients reach it.
	Location string `json:"l"`
	// Draining says the worker is shutting down: plan nothing more on it.
	Draining bool `json:"d,omitempty"`
	// TTL is how long the coordinator keeps the worker without hearing
	// from it again.
	TTL time.Duration `json:"ttl"`
	// Nonce is echoed in the coordinator's acknowledgement.
	Nonce string `json:"n"`
}

type nonceBody struct {
	Nonce string `json:"n"`
	// Instance is the answering worker process's instance id (answers
	// only).
	Instance string `json:"i,omitempty"`
}

// InstanceHeader is the gRPC header a worker's health checks answer
// with: the id of its process (NewInstance), the same one its key-check
// answers carry sealed. A coordinator that sees it change knows the
// process at a location restarted, and checks its key again before it
// plans on it.
const InstanceHeader = "x-icefloe-instance"

// NewInstance returns a fresh instance id for a worker process.
func NewInstance() string { return newNonce() }

func seal(key *wire.Key, kind string, v any) ([]byte, error) {
	return key.SealValue(kind, v, messageTTL)
}

// open unseals a message of kind into v: a message that does not open
// under key is ErrKeyMismatch (wire errors say nothing about the key, and
// neither does this).
func open(key *wire.Key, kind string, sealed []byte, v any) error {
	err := key.OpenValue(kind, sealed, v)
	switch {
	case errors.Is(err, wire.ErrUnsealed):
		return ErrKeyMismatch
	case err != nil:
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return nil
}

func newNonce() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// SealAnnouncement seals a; it fills a.Nonce and returns it.
func SealAnnouncement(key *wire.Key, a Announcement) (sealed []byte, nonce string, err error) {
	a.Nonce = newNonce()
	sealed, err = seal(key, kindAnnouncement, a)
	return sealed, a.Nonce, err
}

// OpenAnnouncement opens an announcement and returns it with the sealed
// acknowledgement to answer, which proves to the worker that the
// coordinator holds the same key.
func OpenAnnouncement(key *wire.Key, sealed []byte) (Announcement, []byte, error) {
	var a Announcement
	if err := open(key, kindAnnouncement, sealed, &a); err != nil {
		return a, nil, err
	}
	if a.Location == "" || a.TTL <= 0 {
		return a, nil, fmt.Errorf("%w: announcement without location or ttl", ErrMalformed)
	}
	ack, err := seal(key, kindAck, nonceBody{Nonce: a.Nonce})
	return a, ack, err
}

// CheckAck verifies the coordinator's acknowledgement of the announcement
// that carried nonce.
func CheckAck(key *wire.Key, ack []byte, nonce string) error {
	_, err := checkNonce(key, kindAck, ack, nonce)
	return err
}

// NewChallenge returns a sealed key-check challenge and the nonce its
// answer must carry.
func NewChallenge(key *wire.Key) (sealed []byte, nonce string, err error) {
	nonce = newNonce()
	sealed, err = seal(key, kindChallenge, nonceBody{Nonce: nonce})
	return sealed, nonce, err
}

// Answer opens a challenge and seals its answer, which carries the
// answering process's instance id: ErrKeyMismatch when the challenge was
// sealed with another key.
func Answer(key *wire.Key, challenge []byte, instance string) ([]byte, error) {
	var c nonceBody
	if err := open(key, kindChallenge, challenge, &c); err != nil {
		return nil, err
	}
	c.Instance = instance
	return seal(key, kindAnswer, c)
}

// CheckAnswer verifies a worker's answer to the challenge with nonce and
// returns the instance id it carries ("" from a worker that names none).
func CheckAnswer(key *wire.Key, answer []byte, nonce string) (instance string, err error) {
	b, err := checkNonce(key, kindAnswer, answer, nonce)
	return b.Instance, err
}

func checkNonce(key *wire.Key, kind string, sealed []byte, nonce string) (nonceBody, error) {
	var b nonceBody
	if err := open(key, kind, sealed, &b); err != nil {
		return b, err
	}
	if subtle.ConstantTimeCompare([]byte(b.Nonce), []byte(nonce)) != 1 {
		return b, fmt.Errorf("%w: answer to another challenge", ErrMalformed)
	}
	return b, nil
}
