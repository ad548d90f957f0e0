import sys

from docsym.cli import main

sys.exit(main())
