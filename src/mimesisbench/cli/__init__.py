"""The command-line interface: thin verbs over the library; errors mapped to exit codes here."""
