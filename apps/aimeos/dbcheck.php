<?php
// rttlab's database probe for the Aimeos start script, over PDO with the
// libpq variables. `php dbcheck.php wait` exits 0 once the database accepts
// a connection; `php dbcheck.php demo` prints how many demo products (codes
// "demo-...") the shop holds, 0 while its tables do not exist yet.
$dsn = sprintf('pgsql:host=%s;port=%s;dbname=%s', getenv('PGHOST'), getenv('PGPORT') ?: '5432', getenv('PGDATABASE'));
try {
    $db = new PDO($dsn, getenv('PGUSER'), getenv('PGPASSWORD'), [PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION, PDO::ATTR_TIMEOUT => 2]);
} catch (PDOException $e) {
    fwrite(STDERR, 'aimeos: database: ' . $e->getMessage() . "\n");
    exit(1);
}
if (($argv[1] ?? '') === 'demo') {
    $exists = $db->query("SELECT to_regclass('mshop_product') IS NOT NULL")->fetchColumn();
    echo $exists ? (int) $db->query("SELECT count(*) FROM mshop_product WHERE code LIKE 'demo-%'")->fetchColumn() : 0, "\n";
}
exit(0);
