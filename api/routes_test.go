package api

import (
	"testing"

	"github.com/idemgate/idemgate/auth"
	"github.com/idemgate/idemgate/command"
)

// storeRoles are the API's roles for the store's (command.Op.Role): an
// application's token writes what the store's RoleWrite guards. RoleNode
// has none: no face may propose what the node proposes itself.
var storeRoles = map[command.Role]auth.Role{
	command.RoleRead:  auth.RoleRead,
	command.RoleWrite: auth.RoleApp,
	command.RoleAdmin: auth.RoleAdmin,
}

// TestRouteRolesCoverStoreOps: a route's role is at least the role of
// every store operation it proposes (its stores), so a token the route
// lets through holds the grant the operation's row asks for, as package
// resp derives its commands' from the same rows. A route that proposes
// nothing is the route table's alone.
func TestRouteRolesCoverStoreOps(t *testing.T) {
	checked := 0
	for _, r := range (&handlers{}).routes() {
		for _, o := range r.ops {
			for _, typ := range o.stores {
				checked++
				op := typ.Op()
				want, ok := storeRoles[op.Role]
				switch {
				case !ok:
					t.Errorf("%s %s (%s) proposes %v, whose row's role %d no face may hold", o.method, r.path, o.id, typ, op.Role)
				case r.public:
					t.Errorf("%s %s (%s) is public and proposes %v, which needs role %v", o.method, r.path, o.id, typ, want)
				case o.role < want:
					t.Errorf("%s %s (%s): role %v, but it proposes %v, which needs %v", o.method, r.path, o.id, o.role, typ, want)
				}
			}
		}
	}
	if checked < 10 {
		t.Fatalf("only %d store operations found on the routes: the table is not read", checked)
	}
}
