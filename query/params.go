package query

import (
	"fmt"
	"strings"
)

// ParseParams reads NAME=VALUE settings of $NAME (--param, \param): a
// leading $ is allowed, and a name given twice is an error, never a silent
// last-one-wins.
func ParseParams(settings []string) (map[string]string, error) {
	params := map[string]string{}
	for _, p := range settings {
		name, val, ok := strings.Cut(p, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("--param %q: want NAME=VALUE", p)
		}
		name = strings.TrimPrefix(name, "$")
		if _, dup := params[name]; dup {
			return nil, fmt.Errorf("--param %s is given twice", name)
		}
		params[name] = val
	}
	return params, nil
}

// ParsePlan reads a plan choice (--plan): "optimized" (or "optimised") is
// the rewritten plan, "naive" the initial one; naive reports which.
func ParsePlan(kind string) (naive bool, err error) {
	switch kind {
	case "optimized", "optimised":
		return false, nil
	case "naive":
		return true, nil
	}
	return false, fmt.Errorf("--plan %q: want optimized or naive", kind)
}
