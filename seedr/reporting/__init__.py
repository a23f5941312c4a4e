"""Tables and plots generated from run folders — never typed by hand."""
