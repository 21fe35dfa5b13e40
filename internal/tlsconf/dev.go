package tlsconf

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Lifetimes of the development CA and server certificates.
const (
	devCALifetime   = 10 * 365 * 24 * time.Hour
	devCertLifetime = 365 * 24 * time.Hour
	// devRenewBefore: a server certificate this close to its expiry is
	// made again.
	devRenewBefore = 7 * 24 * time.Hour
)

// Dev returns the files of a development TLS setup in dir: a CA (ca.pem,
// ca-key.pem) and a server certificate it signed (server.pem,
// server-key.pem) for hosts (names or IP addresses). Files from an
// earlier run are kept while they are valid and cover hosts, so clients
// that trust ca.pem keep trusting the server; otherwise they are made
// again. Private keys are written 0600 in a 0700 dir.
func Dev(dir string, hosts []string) (Options, error) {
	o := Options{
		CAFile:   filepath.Join(dir, "ca.pem"),
		CertFile: filepath.Join(dir, "server.pem"),
		KeyFile:  filepath.Join(dir, "server-key.pem"),
	}
	caKeyFile := filepath.Join(dir, "ca-key.pem")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return o, fmt.Errorf("tls: dev dir: %w", err)
	}
	ca, caKey, err := loadPair(o.CAFile, caKeyFile)
	if err != nil || time.Now().Add(devRenewBefore).After(ca.NotAfter) {
		if ca, caKey, err = makeCA(o.CAFile, caKeyFile); err != nil {
			return o, err
		}
	}
	if cert, _, err := loadPair(o.CertFile, o.KeyFile); err == nil && covers(cert, ca, hosts) {
		return o, nil
	}
	return o, makeServer(o, ca, caKey, hosts)
}

func loadPair(certFile, keyFile string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, nil, err
	}
	key, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
	if !ok {
		return nil, nil, errors.New("tls: not an ECDSA key")
	}
	return cert, key, nil
}

// covers tells whether cert is signed by ca, valid for a while yet and
// names every host.
func covers(cert, ca *x509.Certificate, hosts []string) bool {
	if cert.CheckSignatureFrom(ca) != nil || time.Now().Add(devRenewBefore).After(cert.NotAfter) {
		return false
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			if !slices.ContainsFunc(cert.IPAddresses, ip.Equal) {
				return false
			}
		} else if !slices.Contains(cert.DNSNames, h) {
			return false
		}
	}
	return true
}

func serial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

func makeCA(certFile, keyFile string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("tls: dev CA key: %w", err)
	}
	sn, err := serial()
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: "icefloe development CA", Organization: []string{"icefloe"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(devCALifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("tls: dev CA: %w", err)
	}
	if err := writePair(certFile, keyFile, der, key); err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

func makeServer(o Options, ca *x509.Certificate, caKey *ecdsa.PrivateKey, hosts []string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("tls: dev server key: %w", err)
	}
	sn, err := serial()
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{CommonName: "icefloe", Organization: []string{"icefloe"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(devCertLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("tls: dev server certificate: %w", err)
	}
	return writePair(o.CertFile, o.KeyFile, der, key)
}

// writePair writes a certificate and its key, each through a temporary
// file renamed into place so a reader never sees half a file.
func writePair(certFile, keyFile string, der []byte, key *ecdsa.PrivateKey) error {
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return fmt.Errorf("tls: encode key: %w", err)
	}
	if err := writeFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		return err
	}
	return writeFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

func writeFile(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return fmt.Errorf("tls: write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("tls: write %s: %w", path, err)
	}
	return nil
}
