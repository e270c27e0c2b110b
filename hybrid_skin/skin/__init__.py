"""The live display: the GPU preview's drawing, the Add/Remove/Rebind operators and the sidebar panel."""
