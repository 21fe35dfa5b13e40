package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	icecat "github.com/apache/iceberg-go/catalog"
	"golang.org/x/crypto/bcrypt"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/cluster"
	"github.com/icefloe/icefloe/internal/auth"
	"github.com/icefloe/icefloe/internal/authz"
)

// locationRoles: alice may do everything in sandbox but choose where
// files go; carol may choose too (LOCATION on sandbox).
var locationRoles = []authz.Role{
	{Name: "sandboxer", Grants: []authz.Grant{{Privileges: []authz.Privilege{authz.All}, On: "local.sandbox"}}},
	{Name: "placer", Grants: []authz.Grant{{Privileges: []authz.Privilege{authz.All, authz.Location}, On: "local.sandbox"}}},
}

var locationUsers = map[string][]string{"root": {authz.AdminRole}, "alice": {"sandboxer"}, "carol": {"placer"}}

// TestSecurityTableLocations: a user with ALL on schema sandbox cannot
// reach another table's files through a location: choosing one needs
// LOCATION; with it, a location that is, holds or lies in another
// table's place (or holds a schema's folder or the warehouse) is refused
// at CREATE TABLE, CTAS and ALTER TABLE; remove_orphan_files of a table
// whose folder is not its own (one an earlier version let share another
// table's folder) is refused, and DROP TABLE … PURGE of it leaves the
// other table's files. The owner's table reads whole throughout.
func TestSecurityTableLocations(t *testing.T) {
	e := startSecure(t, func(so *cluster.StandaloneOptions) {
		var users []auth.User
		for name, roles := range locationUsers {
			h, err := bcrypt.GenerateFromPassword([]byte(name+"-pw"), bcrypt.MinCost)
			if err != nil {
				t.Fatal(err)
			}
			users = append(users, auth.User{Name: name, PasswordHash: string(h), Roles: roles})
		}
		a, err := auth.New(auth.Options{Key: so.Key, Users: users})
		if err != nil {
			t.Fatal(err)
		}
		policy, err := authz.NewPolicy(locationRoles)
		if err != nil {
			t.Fatal(err)
		}
		so.Security.Auth, so.Security.Policy = a, policy
	})
	login := func(user string) adbc.Connection {
		c, err := e.open(t, map[string]string{adbc.OptionKeyUsername: user, adbc.OptionKeyPassword: user + "-pw"})
		if err != nil {
			t.Fatalf("log in as %s: %v", user, err)
		}
		return c
	}
	root, alice, carol := login("root"), login("alice"), login("carol")
	for _, q := range []string{
		"CREATE SCHEMA sales",
		"CREATE SCHEMA sandbox",
		"CREATE TABLE sales.orders AS SELECT id, status FROM orders LIMIT 2000",
		"INSERT INTO sales.orders SELECT id + 100000, status FROM orders LIMIT 10",
	} {
		execUpdate(t, root, q)
	}
	const whole = "2010"
	ctx := context.Background()
	orders, err := e.s.Mounts.LoadTable(ctx, catalog.TableRef{Catalog: "local", Schema: "sales", Table: "orders"})
	if err != nil {
		t.Fatal(err)
	}
	victim := orders.Table.Location()
	salesDir := victim[:strings.LastIndexByte(victim, '/')]
	wh := salesDir[:strings.LastIndexByte(salesDir, '/')]
	ownerReads := func(when string) {
		t.Helper()
		res, err := query(t, root, "SELECT count(*) FROM sales.orders")
		if err != nil || res.rows[0] != whole {
			t.Fatalf("%s: the owner reads sales.orders: %v %v, want %s rows", when, res.rows, err, whole)
		}
	}
	wantRefused := func(cnxn adbc.Connection, q string, words ...string) {
		t.Helper()
		_, err := tryUpdate(t, cnxn, q)
		wantADBC(t, q, err, adbc.StatusUnauthorized, words...)
	}

	// Without LOCATION, no location at all.
	for _, q := range []string{
		"CREATE TABLE sandbox.evil (a INT) WITH ('location' = '" + victim + "')",
		"CREATE TABLE sandbox.evil (a INT) WITH ('location' = '" + salesDir + "')",
		"CREATE TABLE sandbox.evil (a INT) WITH ('location' = '" + wh + "/sandbox.db/evil')",
		"CREATE TABLE sandbox.evil (a INT) WITH ('write.data.path' = '" + victim + "/data')",
		"CREATE TABLE sandbox.evil WITH ('location' = '" + victim + "') AS SELECT 1 AS a",
	} {
		wantRefused(alice, q, "LOCATION", "local.sandbox.evil")
	}
	execUpdate(t, alice, "CREATE TABLE sandbox.mine (a INT)")
	wantRefused(alice, "ALTER TABLE sandbox.mine SET TBLPROPERTIES ('write.data.path' = '"+victim+"/data')", "LOCATION")
	// With it, only a place of one's own.
	for _, c := range []struct{ q, why string }{
		{"CREATE TABLE sandbox.evil (a INT) WITH ('location' = '" + victim + "')", "is the location of another table"},
		{"CREATE TABLE sandbox.evil (a INT) WITH ('location' = '" + victim + "/data')", "lies in the location of another table"},
		{"CREATE TABLE sandbox.evil (a INT) WITH ('location' = '" + salesDir + "')", "schema's folder"},
		{"CREATE TABLE sandbox.evil (a INT) WITH ('location' = '" + wh + "')", "the warehouse"},
		{"CREATE TABLE sandbox.evil (a INT) WITH ('write.metadata.path' = '" + victim + "/metadata')", "another table"},
		{"CREATE TABLE sandbox.evil (a INT) WITH ('write.object-storage.path' = '" + victim + "')", "another table"},
		{"CREATE TABLE sandbox.evil WITH ('location' = '" + victim + "') AS SELECT 1 AS a", "another table"},
		{"CREATE OR REPLACE TABLE sandbox.mine (a INT) WITH ('location' = '" + victim + "')", "another table"},
		{"ALTER TABLE sandbox.mine SET TBLPROPERTIES ('write.data.path' = '" + victim + "/data')", "another table"},
	} {
		wantRefused(carol, c.q, c.why)
	}
	execUpdate(t, carol, "CREATE TABLE sandbox.placed (a INT) WITH ('location' = '"+wh+"/sandbox.db/placed-here')")
	ownerReads("after the refused locations")

	// remove_orphan_files of a table of its own deletes nothing of another.
	// override: everything, at once; else what is older than 24 h.
	orphans := func(cnxn adbc.Connection, name string, override bool) error {
		q := fmt.Sprintf("CALL system.remove_orphan_files(table => '%s', older_than => TIMESTAMP '2999-01-01 00:00:00', override_min_age => true)", name)
		if !override {
			q = fmt.Sprintf("CALL system.remove_orphan_files(table => '%s', older_than => TIMESTAMP '%s')", name, time.Now().UTC().Add(-48*time.Hour).Format("2006-01-02 15:04:05"))
		}
		_, err := query(t, cnxn, q)
		return err
	}
	if err := orphans(alice, "sandbox.mine", true); err != nil {
		t.Fatalf("remove_orphan_files of alice's own table: %v", err)
	}
	ownerReads("after remove_orphan_files of sandbox.mine")

	// A sandbox table an earlier version let share the victim's folder.
	mt, err := e.s.Mounts.Get("local")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mt.Internal().CreateTable(ctx, icecat.ToIdentifier("sandbox", "shared"), orders.Table.Schema(), icecat.WithLocation(victim)); err != nil {
		t.Fatal(err)
	}
	execUpdate(t, alice, "INSERT INTO sandbox.shared VALUES (1, 'x')")
	vdir, _ := catalog.LocalPath(victim)
	then := time.Now().Add(-72 * time.Hour)
	if err := filepath.Walk(vdir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Chtimes(p, then, then)
	}); err != nil {
		t.Fatal(err)
	}
	for _, override := range []bool{true, false} {
		err := orphans(alice, "sandbox.shared", override)
		wantADBC(t, "remove_orphan_files of a table sharing another's folder", err, adbc.StatusUnauthorized, "not its own")
		ownerReads("after remove_orphan_files of sandbox.shared")
	}
	execUpdate(t, alice, "DROP TABLE sandbox.shared PURGE")
	ownerReads("after DROP TABLE sandbox.shared PURGE")
}
