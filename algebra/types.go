package algebra

import "strings"

// Type is an attribute or expression type.
type Type struct {
	Kind   Kind
	Entity string    // the entity type's name, for KindEntity
	Enum   *EnumType // the enumeration, for KindEnum
}

// EnumType is an enumeration declared in a spec; two enum attributes have the
// same type only if they share the declaration.
type EnumType struct {
	Members []string
	index   map[string]int
}

// NewEnumType makes an enumeration of the given members, in order.
func NewEnumType(members []string) *EnumType {
	e := &EnumType{Members: members, index: make(map[string]int, len(members))}
	for i, m := range members {
		if _, dup := e.index[m]; !dup {
			e.index[m] = i
		}
	}
	return e
}

// Ordinal returns the position of a member, or -1.
func (e *EnumType) Ordinal(name string) int {
	if i, ok := e.index[name]; ok {
		return i
	}
	return -1
}

// Value returns the member named name, or false.
func (e *EnumType) Value(name string) (Value, bool) {
	i := e.Ordinal(name)
	if i < 0 {
		return Value{}, false
	}
	return Enum(name, i), true
}

var (
	TypeInt      = Type{Kind: KindInt}
	TypeFloat    = Type{Kind: KindFloat}
	TypeString   = Type{Kind: KindString}
	TypeBool     = Type{Kind: KindBool}
	TypeTime     = Type{Kind: KindTime}
	TypeDuration = Type{Kind: KindDuration}
)

// EntityType is the type of identifiers of the named entity type.
func EntityType(name string) Type { return Type{Kind: KindEntity, Entity: name} }

// BuiltinType returns the builtin type of an SDL type name.
func BuiltinType(name string) (Type, bool) {
	switch name {
	case "int":
		return TypeInt, true
	case "float":
		return TypeFloat, true
	case "string":
		return TypeString, true
	case "bool":
		return TypeBool, true
	case "time":
		return TypeTime, true
	case "duration":
		return TypeDuration, true
	}
	return Type{}, false
}

// Identical reports whether a and b are the same type.
func Identical(a, b Type) bool {
	if a.Kind != b.Kind {
		return false
	}
	switch a.Kind {
	case KindEntity:
		return a.Entity == b.Entity
	case KindEnum:
		return a.Enum == b.Enum
	}
	return true
}

func (t Type) String() string {
	switch t.Kind {
	case KindEntity:
		return t.Entity
	case KindEnum:
		if t.Enum == nil {
			return "enum"
		}
		return "enum(" + strings.Join(t.Enum.Members, ", ") + ")"
	}
	return t.Kind.String()
}
