package restcatalog

import (
	"maps"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/catalog/tablecrypt"
)

// storage is what a load of p hands out for its files, by the server's
// credential mode:
//
//   - always, the storage settings that hold no secret (s3.endpoint,
//     s3.region, path-style access, …): where the files are, not a key
//     to them;
//   - CredentialsVended: the properties the table's upstream REST
//     catalog vended with it (short-lived and scoped by that catalog),
//     as the config and as the storage credential of the table's
//     location;
//   - CredentialsStatic: every storage property of the catalog and the
//     table, its configured keys included.
//
// Nothing else: a catalog's own keys open every table they reach, so
// they leave only when the operator chose CredentialsStatic. A local
// warehouse needs none: a client reads its files through the file system
// it shares with the server.
func (s *Server) storage(p *catalog.Pinned) (map[string]string, []storageCredential) {
	cfg := map[string]string{}
	red := catalog.Redacted(p.StorageProps)
	for k, v := range p.StorageProps {
		if k != tablecrypt.TableKeyProp && k != "warehouse" && red[k] == v {
			cfg[k] = v
		}
	}
	var secret map[string]string
	switch s.opts.Credentials {
	case CredentialsVended:
		secret = p.Vended
	case CredentialsStatic:
		secret = maps.Clone(p.StorageProps)
		delete(secret, tablecrypt.TableKeyProp)
		delete(secret, "warehouse")
	}
	if len(secret) == 0 {
		return cfg, nil
	}
	maps.Copy(cfg, secret)
	return cfg, []storageCredential{{Prefix: p.Table.Location(), Config: maps.Clone(secret)}}
}
