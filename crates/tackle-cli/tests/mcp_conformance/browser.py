#!/usr/bin/env python3
"""A headless "browser" for the sign-in tests: opens the authorization URL Tackle shows and
follows the redirects, so the authorization server's answer reaches Tackle's loopback listener
exactly as it would from a person's browser. Used as $BROWSER."""
import sys
import urllib.request

with urllib.request.urlopen(sys.argv[1], timeout=30) as response:
    response.read()
