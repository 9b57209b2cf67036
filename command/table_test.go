package command

import (
	"errors"
	"testing"
)

// TestCommandTable: every type of the log format has a row, and the rows'
// properties are the rules the state machine, its proposer and the faces
// followed before they were one table: which pass the disk guard (sweeps
// and the cluster's facts) and which need a key; a transaction holds the
// KV keyspace's commands, and a script all of them but a rename; only a
// read changes
// nothing, only a flush needs the admin role, and no face calls the
// node's own commands.
func TestCommandTable(t *testing.T) {
	diskLow := map[Type]bool{TypeNoop: true, TypeExpire: true, TypeClusterID: true, TypeMemberRemoved: true, TypeKVFlush: true}
	keyless := map[Type]bool{TypeNoop: true, TypeExpire: true, TypeClusterID: true, TypeKVTx: true, TypeScriptEffects: true, TypeKVFlush: true}
	inTx := map[Type]bool{TypeKVSet: true, TypeKVGetDel: true, TypeKVDelete: true, TypeKVIncr: true, TypeKVExpire: true, TypeKVRead: true,
		TypeKVSetRange: true, TypeKVIncrFloat: true, TypeKVRename: true,
		TypeListPush: true, TypeListPop: true, TypeListRem: true, TypeListTrim: true, TypeListMove: true, TypeListSet: true, TypeListInsert: true,
		TypeCollPut: true, TypeCollDel: true, TypeHashIncr: true, TypeCollRead: true, TypeSetPop: true, TypeSetMove: true, TypeSetStore: true, TypeZAdd: true, TypeZRemRange: true, TypeZStore: true,
		TypeStreamAdd: true, TypeStreamTrim: true, TypeStreamDel: true, TypeStreamSetID: true, TypeStreamRead: true,
		TypeStreamGroup: true, TypeStreamGroupRead: true}
	reads := map[Type]bool{TypeKVRead: true, TypeCollRead: true, TypeStreamRead: true, TypeStreamGroupRead: true}
	node := map[Type]bool{TypeNoop: true, TypeExpire: true, TypeClusterID: true, TypeMemberRemoved: true}
	names := map[string]Type{}
	for typ := TypeNoop; typ < typeEnd; typ++ {
		if typ == typeMarkUnknownRetired {
			continue
		}
		s := typ.spec()
		if s == nil || s.name == "" || !typ.Known() {
			t.Fatalf("type %d has no complete row: %+v", typ, s)
		}
		if other, dup := names[s.name]; dup {
			t.Fatalf("types %d and %d are both named %q", other, typ, s.name)
		}
		names[s.name] = typ
		if typ.String() != s.name {
			t.Errorf("Type(%d).String() = %q, want %q", typ, typ.String(), s.name)
		}
		if s.diskLow != diskLow[typ] || typ.AllowedWhenDiskLow() != diskLow[typ] {
			t.Errorf("%s: allowed when the disk is low = %v", typ, s.diskLow)
		}
		if s.key == keyless[typ] {
			t.Errorf("%s: needs a key = %v", typ, s.key)
		}
		if InTx(typ) != inTx[typ] || s.Tx != inTx[typ] || (s.Tx && !s.key) {
			t.Errorf("%s: a transaction may hold it = %v", typ, InTx(typ))
		}
		if s.Script != (inTx[typ] && typ != TypeKVRename) {
			t.Errorf("%s: a script may make it = %v", typ, s.Script)
		}
		if s.Write == reads[typ] {
			t.Errorf("%s: writes = %v", typ, s.Write)
		}
		want := RoleWrite
		switch {
		case node[typ]:
			want = RoleNode
		case reads[typ]:
			want = RoleRead
		case typ == TypeKVFlush:
			want = RoleAdmin
		}
		if s.Role != want || typ.Op() != s.Op {
			t.Errorf("%s: role %d, want %d", typ, s.Role, want)
		}
		if s.key && s.uses&fKey == 0 {
			t.Errorf("%s needs a key it does not use", typ)
		}
	}
	for _, typ := range []Type{TypeUnknown, typeMarkUnknownRetired, typeEnd, 200, 255} {
		if typ.spec() != nil || typ.Known() || typ.AllowedWhenDiskLow() || typ.Op() != (Op{}) {
			t.Errorf("type %d is applied or passes the disk guard", typ)
		}
		c := Command{Type: typ, Key: []byte("k")}
		if err := c.Validate(); !errors.Is(err, ErrBadCommand) {
			t.Errorf("Validate(type %d) = %v, want ErrBadCommand", typ, err)
		}
	}
	if TypeUnknown.String() != "unknown" || Type(200).String() != "type(200)" {
		t.Errorf("String of unknown types = %q, %q", TypeUnknown.String(), Type(200).String())
	}
}

// TestCommandCodes: every row declares what the state machine may answer
// for it: what every command may (always) and at least one code of its
// own, each one this build knows; a type this build does not apply
// declares nothing. Package fsm's TestApplyCodes holds the rows to the
// apply functions.
func TestCommandCodes(t *testing.T) {
	for typ := TypeNoop; typ < typeEnd; typ++ {
		if !typ.Known() {
			continue
		}
		codes := typ.Op().Codes
		if codes&always != always || codes == always {
			t.Errorf("%s: declares %v", typ, codes)
		}
		for c := range codes.All() {
			if !c.Known() {
				t.Errorf("%s: declares unknown code %d", typ, c)
			}
		}
	}
	for _, typ := range []Type{TypeUnknown, typeMarkUnknownRetired, typeEnd, 255} {
		if typ.Op().Codes != 0 {
			t.Errorf("type %d declares %v", typ, typ.Op().Codes)
		}
	}
	if s := CodesOf(CodeOK, CodeNotFound, CodeWrongType); s.String() != "{0 3 23}" || s&CodesOf(CodeExists) != 0 {
		t.Errorf("CodesOf(0, 3, 23) = %v", s)
	}
}
