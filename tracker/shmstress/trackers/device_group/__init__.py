"""A shared-device-group scheduler plugin's device tracker: select, allocate, bind, roll back."""
