import sys

from mau.cli import main

sys.exit(main())
