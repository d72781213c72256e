from profiler_kit.cli import main

raise SystemExit(main())
