enum FakeGCSServerPlaceholder {}
