// The resources of one cluster-failover deployment, in one resource group. Storage is reached only with
// the app's user-assigned identity (shared keys off); secrets live in Key Vault and reach the app as
// Key Vault references; telemetry goes to a workspace-based Application Insights with local auth off.

param location string
param tags object
param nodeVersion string
param failoverEnabled string
param resourceEvictionRate string
param unhealthyClusterThreshold string
@secure()
param adminToken string
@secure()
param reporterSigningKey string
@secure()
param alertmanagerToken string
@secure()
param azureMonitorToken string
@secure()
param karmadaKubeconfig string
@secure()
param memberKubeconfigs string
param alertEmail string
param maximumInstanceCount int
param instanceMemoryMB int

var suffix = uniqueString(resourceGroup().id)
var deploymentContainer = 'app-package'

// What the code uses (shared/queue/storageQueue.ts QUEUES, shared/store/tableStorage.ts TABLES); each
// queue also gets its `-poison` queue. A test keeps these lists in step with the code.
var queueNames = ['taint-evaluations', 'taint-manager', 'evictions', 'scheduler', 'application-failover', 'apply-chunks']
var tableNames = ['clusters', 'clustertaintpolicies', 'events', 'leases', 'bindings', 'ledger', 'writejournal', 'propagationpolicies', 'resourcetemplates', 'karmadastate', 'failoverbudgets', 'applyoperations']

// Built-in role definition IDs.
var roles = {
  storageBlobDataOwner: 'b7e6dc6d-f1e8-4753-8033-0f276bb0955b'
  storageQueueDataContributor: '974c5e8b-45b9-4653-ba55-5f855dd0fb88'
  storageTableDataContributor: '0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3'
  monitoringMetricsPublisher: '3913510d-42f4-4e42-8a64-420c390055eb'
  keyVaultSecretsUser: '4633458b-17de-408a-b874-0445c86b69e6'
}

resource identity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: 'id-failover-${suffix}'
  location: location
  tags: tags
}

resource workspace 'Microsoft.OperationalInsights/workspaces@2023-09-01' = {
  name: 'log-failover-${suffix}'
  location: location
  tags: tags
  properties: {
    sku: { name: 'PerGB2018' }
    retentionInDays: 30
  }
}

resource insights 'Microsoft.Insights/components@2020-02-02' = {
  name: 'appi-failover-${suffix}'
  location: location
  tags: tags
  kind: 'web'
  properties: {
    Application_Type: 'web'
    WorkspaceResourceId: workspace.id
    // Only Entra ID (the app's identity) may send telemetry.
    DisableLocalAuth: true
  }
}

resource storage 'Microsoft.Storage/storageAccounts@2023-05-01' = {
  name: 'stfailover${suffix}'
  location: location
  tags: tags
  kind: 'StorageV2'
  sku: { name: 'Standard_LRS' }
  properties: {
    allowSharedKeyAccess: false
    allowBlobPublicAccess: false
    defaultToOAuthAuthentication: true
    minimumTlsVersion: 'TLS1_2'
    supportsHttpsTrafficOnly: true
  }
}

resource blobService 'Microsoft.Storage/storageAccounts/blobServices@2023-05-01' = {
  parent: storage
  name: 'default'
}

resource packageContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = {
  parent: blobService
  name: deploymentContainer
}

resource queueService 'Microsoft.Storage/storageAccounts/queueServices@2023-05-01' = {
  parent: storage
  name: 'default'
}

resource queues 'Microsoft.Storage/storageAccounts/queueServices/queues@2023-05-01' = [
  for name in concat(queueNames, map(queueNames, q => '${q}-poison')): {
    parent: queueService
    name: name
  }
]

resource tableService 'Microsoft.Storage/storageAccounts/tableServices@2023-05-01' = {
  parent: storage
  name: 'default'
}

resource tables 'Microsoft.Storage/storageAccounts/tableServices/tables@2023-05-01' = [
  for name in tableNames: {
    parent: tableService
    name: name
  }
]

resource vault 'Microsoft.KeyVault/vaults@2023-07-01' = {
  name: 'kv-failover-${suffix}'
  location: location
  tags: tags
  properties: {
    tenantId: subscription().tenantId
    sku: { family: 'A', name: 'standard' }
    enableRbacAuthorization: true
    enableSoftDelete: true
    softDeleteRetentionInDays: 7
  }
}

resource adminTokenSecret 'Microsoft.KeyVault/vaults/secrets@2023-07-01' = {
  parent: vault
  name: 'admin-token'
  properties: { value: adminToken }
}

resource signingKeySecret 'Microsoft.KeyVault/vaults/secrets@2023-07-01' = {
  parent: vault
  name: 'reporter-signing-key'
  properties: { value: reporterSigningKey }
}

resource alertmanagerTokenSecret 'Microsoft.KeyVault/vaults/secrets@2023-07-01' = {
  parent: vault
  name: 'alertmanager-token'
  properties: { value: alertmanagerToken }
}

resource azureMonitorTokenSecret 'Microsoft.KeyVault/vaults/secrets@2023-07-01' = {
  parent: vault
  name: 'azure-monitor-token'
  properties: { value: azureMonitorToken }
}

// Karmada mode and standalone member probes: kubeconfigs hold credentials, so they live in Key Vault too.
resource karmadaKubeconfigSecret 'Microsoft.KeyVault/vaults/secrets@2023-07-01' = if (!empty(karmadaKubeconfig)) {
  parent: vault
  name: 'karmada-kubeconfig'
  properties: { value: karmadaKubeconfig }
}

resource memberKubeconfigsSecret 'Microsoft.KeyVault/vaults/secrets@2023-07-01' = if (!empty(memberKubeconfigs)) {
  parent: vault
  name: 'member-kubeconfigs'
  properties: { value: memberKubeconfigs }
}

var karmadaSettings = empty(karmadaKubeconfig)
  ? []
  : [
      { name: 'KARMADA_KUBECONFIG', value: '@Microsoft.KeyVault(SecretUri=${karmadaKubeconfigSecret.properties.secretUri})' }
    ]
var memberSettings = empty(memberKubeconfigs)
  ? []
  : [
      { name: 'MEMBER_KUBECONFIGS', value: '@Microsoft.KeyVault(SecretUri=${memberKubeconfigsSecret.properties.secretUri})' }
    ]

resource plan 'Microsoft.Web/serverfarms@2024-04-01' = {
  name: 'plan-failover-${suffix}'
  location: location
  tags: tags
  kind: 'functionapp'
  sku: { name: 'FC1', tier: 'FlexConsumption' }
  properties: { reserved: true }
}

resource functionApp 'Microsoft.Web/sites@2024-04-01' = {
  name: 'func-failover-${suffix}'
  location: location
  tags: union(tags, { 'azd-service-name': 'api' })
  kind: 'functionapp,linux'
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: { '${identity.id}': {} }
  }
  properties: {
    serverFarmId: plan.id
    httpsOnly: true
    // Key Vault references resolve with the user-assigned identity.
    keyVaultReferenceIdentity: identity.id
    functionAppConfig: {
      deployment: {
        storage: {
          type: 'blobContainer'
          value: '${storage.properties.primaryEndpoints.blob}${deploymentContainer}'
          authentication: {
            type: 'UserAssignedIdentity'
            userAssignedIdentityResourceId: identity.id
          }
        }
      }
      scaleAndConcurrency: {
        maximumInstanceCount: maximumInstanceCount
        instanceMemoryMB: instanceMemoryMB
      }
      runtime: { name: 'node', version: nodeVersion }
    }
    siteConfig: {
      minTlsVersion: '1.2'
      appSettings: concat([
        // Storage through the identity: the Functions host (triggers, timers' leases) and the app's own clients.
        { name: 'AzureWebJobsStorage__accountName', value: storage.name }
        { name: 'AzureWebJobsStorage__credential', value: 'managedidentity' }
        { name: 'AzureWebJobsStorage__clientId', value: identity.properties.clientId }
        { name: 'AzureWebJobsStorage__blobServiceUri', value: storage.properties.primaryEndpoints.blob }
        { name: 'AzureWebJobsStorage__queueServiceUri', value: storage.properties.primaryEndpoints.queue }
        { name: 'AzureWebJobsStorage__tableServiceUri', value: storage.properties.primaryEndpoints.table }
        // Telemetry: the connection string carries no secret usable without Entra ID (local auth is off).
        { name: 'APPLICATIONINSIGHTS_CONNECTION_STRING', value: insights.properties.ConnectionString }
        { name: 'APPLICATIONINSIGHTS_AUTHENTICATION_STRING', value: 'ClientId=${identity.properties.clientId};Authorization=AAD' }
        { name: 'OTEL_SERVICE_NAME', value: 'cluster-failover' }
        // The Node worker's V8 flags, as `npm start` runs the host (shared/local/nodeFlags.ts says why).
        { name: 'languageWorkers__node__arguments', value: '--heap-growing-percent=100' }
        // Checks on; secrets from Key Vault.
        { name: 'AUTH_MODE', value: 'required' }
        { name: 'ADMIN_TOKEN', value: '@Microsoft.KeyVault(SecretUri=${adminTokenSecret.properties.secretUri})' }
        { name: 'REPORTER_SIGNING_KEY', value: '@Microsoft.KeyVault(SecretUri=${signingKeySecret.properties.secretUri})' }
        { name: 'ALERTMANAGER_TOKEN', value: '@Microsoft.KeyVault(SecretUri=${alertmanagerTokenSecret.properties.secretUri})' }
        { name: 'AZURE_MONITOR_TOKEN', value: '@Microsoft.KeyVault(SecretUri=${azureMonitorTokenSecret.properties.secretUri})' }
        // Failover behaviour; every other setting keeps the default docs/reference/configuration.md lists.
        { name: 'FAILOVER_ENABLED', value: failoverEnabled }
        { name: 'RESOURCE_EVICTION_RATE', value: resourceEvictionRate }
        { name: 'UNHEALTHY_CLUSTER_THRESHOLD', value: unhealthyClusterThreshold }
        // The blast-radius guard: one ClusterTaintPolicy holds NoExecute/PreferNoExecute taints on at most this share of the fleet.
        { name: 'MAX_FLEET_SHARE_TAINTED_BY_POLICY', value: '0.5' }
      ], karmadaSettings, memberSettings)
    }
  }
  dependsOn: [packageContainer, queues, tables, blobOwner, queueContributor, tableContributor, metricsPublisher, secretsUser]
}

// Role assignments of the app's identity: exactly what the code and the host need.
resource blobOwner 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(storage.id, identity.id, roles.storageBlobDataOwner)
  scope: storage
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.storageBlobDataOwner)
    principalId: identity.properties.principalId
    principalType: 'ServicePrincipal'
  }
}

resource queueContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(storage.id, identity.id, roles.storageQueueDataContributor)
  scope: storage
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.storageQueueDataContributor)
    principalId: identity.properties.principalId
    principalType: 'ServicePrincipal'
  }
}

resource tableContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(storage.id, identity.id, roles.storageTableDataContributor)
  scope: storage
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.storageTableDataContributor)
    principalId: identity.properties.principalId
    principalType: 'ServicePrincipal'
  }
}

resource metricsPublisher 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(insights.id, identity.id, roles.monitoringMetricsPublisher)
  scope: insights
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.monitoringMetricsPublisher)
    principalId: identity.properties.principalId
    principalType: 'ServicePrincipal'
  }
}

resource secretsUser 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(vault.id, identity.id, roles.keyVaultSecretsUser)
  scope: vault
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.keyVaultSecretsUser)
    principalId: identity.properties.principalId
    principalType: 'ServicePrincipal'
  }
}

// Alerts on the failover metrics and logs (Application Insights tables), every 5 minutes.
resource alertGroup 'Microsoft.Insights/actionGroups@2023-01-01' = {
  name: 'ag-failover-${suffix}'
  location: 'global'
  tags: tags
  properties: {
    groupShortName: 'failover'
    enabled: true
    emailReceivers: empty(alertEmail) ? [] : [{ name: 'operator', emailAddress: alertEmail, useCommonAlertSchema: true }]
  }
}

var alertRules = [
  {
    name: 'fleet-tier-not-primary'
    description: 'The fleet is unhealthy: evictions run at the secondary rate or are halted (cluster_failure_rate above UNHEALTHY_CLUSTER_THRESHOLD).'
    severity: 1
    query: 'customMetrics | where name == "cluster_failure_rate" | summarize worst = max(valueMax) | where worst > ${unhealthyClusterThreshold}'
  }
  {
    name: 'poison-messages'
    description: 'A queue message failed maxDequeueCount times and was moved to a -poison queue.'
    severity: 2
    query: 'traces | where message has "-poison" and (message has "Moving message" or message has "poison queue") | summarize moved = count() | where moved > 0'
  }
  {
    name: 'eviction-failures'
    description: 'The eviction worker failed (eviction_processing_total with result=error); the message is retried, then poisoned.'
    severity: 2
    query: 'customMetrics | where name == "eviction_processing_total" and tostring(customDimensions.result) == "error" | summarize failures = sum(valueSum) | where failures > 0'
  }
]

resource alerts 'Microsoft.Insights/scheduledQueryRules@2023-03-15-preview' = [
  for rule in alertRules: {
    name: 'alert-failover-${rule.name}-${suffix}'
    location: location
    tags: tags
    properties: {
      displayName: 'cluster-failover: ${rule.name}'
      description: rule.description
      severity: rule.severity
      enabled: true
      scopes: [insights.id]
      evaluationFrequency: 'PT5M'
      windowSize: 'PT5M'
      criteria: {
        allOf: [
          {
            query: rule.query
            timeAggregation: 'Count'
            operator: 'GreaterThan'
            threshold: 0
            failingPeriods: { numberOfEvaluationPeriods: 1, minFailingPeriodsToAlert: 1 }
          }
        ]
      }
      actions: { actionGroups: [alertGroup.id] }
    }
  }
]

output functionAppName string = functionApp.name
output apiUrl string = 'https://${functionApp.properties.defaultHostName}/api'
output applicationInsightsName string = insights.name
output keyVaultName string = vault.name
