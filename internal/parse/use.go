package parse

// Use is USE catalog.schema, USE schema or USE catalog: it sets the
// session's defaults for unqualified names.
type Use struct {
	Name []string
}

func (*Use) body() {}

func parseUse(c *cursor) (Body, error) {
	name, err := c.name(2)
	if err != nil {
		return nil, err
	}
	return &Use{Name: name}, c.end()
}
