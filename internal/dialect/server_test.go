package dialect

import "testing"

func TestMariaDBReturning(t *testing.T) {
	for version, want := range map[string]bool{
		"10.11.19-MariaDB-0+deb12u1": true,
		"10.5.0-MariaDB":             true,
		"5.5.5-10.11.6-MariaDB":      true, // as some proxies report it
		"11.4.2-MariaDB-ubu2404":     true,
		"10.4.32-MariaDB":            false,
		"8.0.36":                     false, // MySQL
		"8.0.11-TiDB-v7.5.1":         false,
		"8.0.30-Vitess":              false,
		"":                           false,
		"MariaDB":                    false,
	} {
		if got := MariaDBReturning(version); got != want {
			t.Errorf("MariaDBReturning(%q) = %v, want %v", version, got, want)
		}
	}
}
