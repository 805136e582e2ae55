from isthmus.cli import main

raise SystemExit(main())
