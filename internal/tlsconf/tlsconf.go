package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"go.uber.org/zap"
)

// reloadEvery is how often the certificate files are checked for a change.
const reloadEvery = time.Second

// Options name the files of a TLS setup.
type Options struct {
	// CertFile and KeyFile are the PEM server certificate (chain) and
	// its private key.
	CertFile, KeyFile string
	// CAFile holds the PEM CAs that sign the servers' certificates: what
	// icefloe's own clients (coordinator → workers, worker → worker)
	// verify against. Empty means the system's roots.
	CAFile string
}

// Validate reports every problem at once.
func (o Options) Validate() error {
	var errs []error
	if o.CertFile == "" {
		errs = append(errs, errors.New("tls: cert_file is required"))
	}
	if o.KeyFile == "" {
		errs = append(errs, errors.New("tls: key_file is required"))
	}
	return errors.Join(errs...)
}

// Server returns the configuration of a TLS listener whose certificate is
// read from the files, now (an error if they do not load) and again
// whenever they change; a change that does not load is logged and the
// previous certificate kept.
func Server(o Options, log *zap.Logger) (*tls.Config, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = zap.NewNop()
	}
	r := &reloader{cert: o.CertFile, key: o.KeyFile, log: log}
	if err := r.load(); err != nil {
		return nil, err
	}
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: r.get,
		NextProtos:     []string{"h2"},
	}, nil
}

// Client returns the configuration icefloe's own clients dial grpc+tls
// locations with: the CAs of caFile, or the system's roots when empty.
func Client(caFile string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile == "" {
		return cfg, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("tls: ca_file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("tls: ca_file %s holds no PEM certificate", caFile)
	}
	cfg.RootCAs = pool
	return cfg, nil
}

// reloader serves the certificate of two files, read again when their
// size or modification time changes.
type reloader struct {
	cert, key string
	log       *zap.Logger

	mu      sync.Mutex
	current *tls.Certificate
	stamp   string
	checked time.Time
}

func stampOf(paths ...string) (string, error) {
	s := ""
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return "", err
		}
		s += fmt.Sprintf("%d/%d;", fi.Size(), fi.ModTime().UnixNano())
	}
	return s, nil
}

// load reads the files if they changed; r.mu is held or r is new.
func (r *reloader) load() error {
	stamp, err := stampOf(r.cert, r.key)
	if err != nil {
		return fmt.Errorf("tls: %w", err)
	}
	if r.current != nil && stamp == r.stamp {
		return nil
	}
	cert, err := tls.LoadX509KeyPair(r.cert, r.key)
	if err != nil {
		return fmt.Errorf("tls: load %s and %s: %w", r.cert, r.key, err)
	}
	if r.current != nil {
		r.log.Info("tls: server certificate reloaded", zap.String("cert_file", r.cert))
	}
	r.current, r.stamp = &cert, stamp
	return nil
}

func (r *reloader) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now := time.Now(); now.Sub(r.checked) >= reloadEvery {
		r.checked = now
		if err := r.load(); err != nil {
			r.log.Warn("tls: keeping the previous server certificate", zap.Error(err))
		}
	}
	return r.current, nil
}
