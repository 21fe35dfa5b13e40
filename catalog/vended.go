package catalog

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
)

// Vending is a catalog that vends storage credentials with its tables (a
// REST catalog answering with "config" or "storage-credentials").
type Vending interface {
	icecat.Catalog
	// VendedProps returns the storage properties vended with the table
	// whose metadata is at location, and when they expire (zero: not
	// said). ok is false when nothing was vended for it.
	VendedProps(location string) (props map[string]string, expires time.Time, ok bool)
}

// maxVended bounds how many tables' vended properties are remembered.
const maxVended = 4096

// vendedStore remembers the storage properties of recent LoadTable answers
// by metadata location. It is safe for concurrent use.
type vendedStore struct {
	mu    sync.Mutex
	byLoc map[string]vended
	order []string
}

type vended struct {
	props   map[string]string
	expires time.Time
}

func newVendedStore() *vendedStore { return &vendedStore{byLoc: map[string]vended{}} }

func (v *vendedStore) put(location string, props map[string]string, expires time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if _, ok := v.byLoc[location]; !ok {
		v.order = append(v.order, location)
		if len(v.order) > maxVended {
			delete(v.byLoc, v.order[0])
			v.order = v.order[1:]
		}
	}
	v.byLoc[location] = vended{props: props, expires: expires}
}

func (v *vendedStore) get(location string) (map[string]string, time.Time, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	e, ok := v.byLoc[location]
	if !ok {
		return nil, time.Time{}, false
	}
	return maps.Clone(e.props), e.expires, true
}

// vendingTransport reads every LoadTable-shaped answer (load, create,
// commit) going through it and keeps its vended storage properties.
type vendingTransport struct {
	base  http.RoundTripper
	store *vendedStore
}

func (t *vendingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(req.URL.Path, "/tables/") ||
		!strings.Contains(resp.Header.Get("Content-Type"), "json") && resp.Header.Get("Content-Type") != "" {
		return resp, err
	}
	body, rerr := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if rerr != nil {
		return resp, nil
	}
	t.capture(body)
	return resp, nil
}

func (t *vendingTransport) capture(body []byte) {
	var res struct {
		MetadataLocation string            `json:"metadata-location"`
		Config           map[string]string `json:"config"`
		Metadata         struct {
			Location string `json:"location"`
		} `json:"metadata"`
		StorageCredentials []struct {
			Prefix string            `json:"prefix"`
			Config map[string]string `json:"config"`
		} `json:"storage-credentials"`
	}
	if err := json.Unmarshal(body, &res); err != nil || res.MetadataLocation == "" {
		return
	}
	props := map[string]string{}
	for k, v := range res.Config {
		if isStorageKey(k) {
			props[k] = v
		}
	}
	best := -1
	for i, c := range res.StorageCredentials {
		if strings.HasPrefix(res.Metadata.Location, c.Prefix) && (best < 0 || len(c.Prefix) > len(res.StorageCredentials[best].Prefix)) {
			best = i
		}
	}
	if best >= 0 {
		maps.Copy(props, res.StorageCredentials[best].Config)
	}
	if len(props) == 0 {
		return
	}
	t.store.put(res.MetadataLocation, props, credentialsExpiry(props))
}

// credentialsExpiry reads the earliest expiry a set of storage properties
// states (epoch milliseconds, as REST catalogs send them).
func credentialsExpiry(props map[string]string) time.Time {
	var out time.Time
	for k, v := range props {
		if k != "s3.session-token-expires-at-ms" && k != "gcs.oauth2.token-expires-at" && k != "expiration-time" &&
			!strings.HasPrefix(k, "adls.sas-token-expires-at-ms") {
			continue
		}
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			continue
		}
		if t := time.UnixMilli(ms); out.IsZero() || t.Before(out) {
			out = t
		}
	}
	return out
}

func isStorageKey(k string) bool {
	for _, p := range storagePrefixes {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return k == "expiration-time"
}

// restCatalog is a REST catalog that remembers vended credentials.
type restCatalog struct {
	*rest.Catalog
	vended *vendedStore
	// transport is ours, so the catalog's Close leaves it open.
	transport *http.Transport
}

// Close closes the catalog and the connections of its transport.
func (c *restCatalog) Close() error {
	err := c.Catalog.Close()
	c.transport.CloseIdleConnections()
	return err
}

// VendedProps implements Vending.
func (c *restCatalog) VendedProps(location string) (map[string]string, time.Time, bool) {
	return c.vended.get(location)
}

var _ Vending = (*restCatalog)(nil)
